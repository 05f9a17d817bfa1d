#pragma once
// How an executor prices communication: the one piece a backend swaps to change the network model
// while keeping the execution semantics (sim/engine/executor.hpp). The analytic model prices each
// collective in closed form (network/collective_cost.hpp); a contention-aware model can price the
// same calls from a flow-level simulation.

#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

class CommunicationModel {
 public:
  virtual ~CommunicationModel() = default;
  // Time of one collective on a per-rank buffer of `size` bytes (nccl-tests' convention) over a group
  // placed as `group`. Must be a pure function of its arguments: the executor asks once per distinct
  // (placement, op, size) and caches the answer.
  virtual core::Seconds collective_time(core::CollectiveOp op, core::Bytes size, const network::GroupPlacement& group) = 0;
  // Time of one send/recv of `size` bytes between two GPUs, on one node or on two.
  virtual core::Seconds p2p_time(core::Bytes size, bool same_node) = 0;
  // The same between ranks `from` and `to` (whose nodes' NICs may differ: pools with their own
  // network); by default p2p_time(size, same_node).
  virtual core::Seconds p2p_time_between(core::Bytes size, bool same_node, int from, int to) {
    (void)from;
    (void)to;
    return p2p_time(size, same_node);
  }
};

// network::collective_cost and network::p2p_time on one cluster and network profile.
class AnalyticCommunicationModel final : public CommunicationModel {
 public:
  // REQUIRES: `cluster` outlives the model.
  AnalyticCommunicationModel(const network::ClusterConfig& cluster, const core::NetworkProfile& profile,
                             network::Algorithm algorithm);
  core::Seconds collective_time(core::CollectiveOp op, core::Bytes size, const network::GroupPlacement& group) override;
  core::Seconds p2p_time(core::Bytes size, bool same_node) override;
  core::Seconds p2p_time_between(core::Bytes size, bool same_node, int from, int to) override;

 private:
  const network::ClusterConfig* cluster_;
  core::NetworkProfile profile_;
  network::Algorithm algorithm_;
};

}  // namespace trainsim::engine
