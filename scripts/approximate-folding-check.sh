#!/usr/bin/env bash
# Whether simulation.node_symmetry "approximate" may be the default (issue 32): scripts/
# symmetry-check.sh (symmetric against full simulations of GPT-3 6.7B on 64 A100 under 25 layouts
# and three fabrics) and scripts/backend-check.sh (SimGrid against analytic on every bundled
# scenario and validation case), both with every run given --set simulation.node_symmetry=approximate
# (a wrapper binary). Compare the SimGrid columns with the same scripts run without it: a
# difference is what folding loses on that case. Usage: scripts/approximate-folding-check.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/trainsim" <<WRAP
#!/usr/bin/env bash
exec "$repo/build/sim/cli/trainsim" "\$@" --set simulation.node_symmetry=approximate
WRAP
chmod +x "$tmp/trainsim"
echo "== scripts/symmetry-check.sh, node_symmetry approximate"
"$repo/scripts/symmetry-check.sh" "$tmp/trainsim"
echo "== scripts/backend-check.sh, node_symmetry approximate"
TRAINSIM_BIN="$tmp/trainsim" "$repo/scripts/backend-check.sh" "$@"
