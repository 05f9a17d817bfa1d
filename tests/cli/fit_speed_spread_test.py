#!/usr/bin/env python3
"""scripts/fit_speed_spread.py against a stand-in trainsim whose predictions are known in closed form.

The stand-in answers `validate ... --set cluster.gpu_speed_spread=S` with two series of two cases:
  time series "t": t-100gpu measured 10 s, predicted 10 (1 + S);  t-1000gpu measured 11 s, predicted 10 (1 + 2 S)
  MFU series  "m": m-100gpu measured 0.50, predicted 0.50 / (1 + S);  m-1000gpu measured 0.45, predicted 0.50 / (1 + 2 S)
As time residuals (ln(predicted / measured), an MFU inverted), each series' change from 100 to 1000
GPUs is d = ln(f(S) / 1.1) for "t" and ln(0.9 f(S)) for "m", f(S) = (1 + 2 S) / (1 + S); the
within-series sum of squares is (d_t^2 + d_m^2) / 2. Hand-computed:
  S = 0:    d_t = ln(1 / 1.1) = -9.53%, d_m = ln(0.9) = -10.54%
  S = 0.1:  f = 1.090909: d_t = ln(0.991736) = -0.8299%, d_m = ln(0.981818) = -1.8349%:
            sum of squares (0.8299^2 + 1.8349^2) / 2 = 2.028 %^2
  S = 0.15: f = 1.130435: d_t = +2.7294%, d_m = +1.7242%: 5.211 %^2
  S = 0.05: f = 1.047619: d_t = -4.8790%, d_m = -5.8840%: 29.213 %^2
so the best of the grid 0, 0.05, 0.1, 0.15 is 0.1.
Usage: fit_speed_spread_test.py SOURCE_DIR
"""

import os
import re
import stat
import subprocess
import sys
import tempfile

FAKE = r'''#!/usr/bin/env python3
import json, sys
s = float([a for a in sys.argv if a.startswith("cluster.gpu_speed_spread=")][0].split("=")[1])
cases = [("t-100gpu", "iteration_time_s", 10 * (1 + s), 10.0), ("t-1000gpu", "iteration_time_s", 10 * (1 + 2 * s), 11.0),
         ("m-100gpu", "mfu", 0.5 / (1 + s), 0.5), ("m-1000gpu", "mfu", 0.5 / (1 + 2 * s), 0.45)]
print(json.dumps({"cases": [{"case": n, "metric": m, "predicted": p, "measured": e, "signed_error": p / e - 1}
                            for n, m, p, e in cases]}))
'''


def main():
    src = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "trainsim")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        out = subprocess.run([sys.executable, os.path.join(src, "scripts", "fit_speed_spread.py"), fake, tmp,
                              "--grid", "0,0.05,0.1,0.15"], capture_output=True, text=True, timeout=60)
    text = out.stdout
    failures = []
    if out.returncode != 0:
        failures.append(f"exit {out.returncode}: {out.stderr}")
    expected = [
        r"sigma 0\n(.*\n)*?  m: residual change 100 -> 1000 GPUs: -10\.54% \(time\)",
        r"sigma 0\n(.*\n)*?  t: residual change 100 -> 1000 GPUs: -9\.53% \(time\)",
        r"sigma 0\.05\n(.*\n)*?  sum of squares of within-series residuals: 29\.213 \(%\^2\)",
        r"sigma 0\.1\n(.*\n)*?  sum of squares of within-series residuals: 2\.028 \(%\^2\)",
        r"sigma 0\.15\n(.*\n)*?  sum of squares of within-series residuals: 5\.211 \(%\^2\)",
        r"best sigma on the grid: 0\.1 ",
    ]
    for pattern in expected:
        if not re.search(pattern, text):
            failures.append(f"not found: {pattern}")
    if failures:
        print(text)
        print("\n".join(failures), file=sys.stderr)
        return 1
    print("fit_speed_spread: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
