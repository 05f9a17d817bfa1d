#include "sim/engine/communication_model.hpp"

namespace trainsim::engine {

AnalyticCommunicationModel::AnalyticCommunicationModel(const network::ClusterConfig& cluster,
                                                       const core::NetworkProfile& profile, network::Algorithm algorithm)
    : cluster_(&cluster), profile_(profile), algorithm_(algorithm) {}

core::Seconds AnalyticCommunicationModel::collective_time(core::CollectiveOp op, core::Bytes size,
                                                          const network::GroupPlacement& group) {
  return network::collective_cost(op, size, group, *cluster_, profile_, algorithm_).time;
}

core::Seconds AnalyticCommunicationModel::p2p_time(core::Bytes size, bool same_node) {
  return network::p2p_time(size, same_node, *cluster_, profile_);
}

core::Seconds AnalyticCommunicationModel::p2p_time_between(core::Bytes size, bool same_node, int from, int to) {
  if (!cluster_->pool_networks()) return p2p_time(size, same_node);
  return network::p2p_time(size, from, to, *cluster_, profile_);
}

}  // namespace trainsim::engine
