// Our declarations of the NCCL ABI (record/nccl_wrapper.hpp, record/nccl_profiler_abi.hpp) against
// the installed nccl.h, wherever it is found.

#include <gtest/gtest.h>
#include <nccl.h>

#include "tracer/record/nccl_profiler_abi.hpp"
#include "tracer/record/nccl_wrapper.hpp"

namespace trainsim::tracer {
namespace {

TEST(NcclAbi, ResultAndDataTypeCodesMatchNcclH) {
  EXPECT_EQ(nccl_api::SUCCESS, ncclSuccess);
  EXPECT_EQ(nccl_api::SYSTEM_ERROR, ncclSystemError);
  EXPECT_EQ(nccl_abi::INTERNAL_ERROR, ncclInternalError);
  EXPECT_EQ(nccl_api::data_type(ncclInt8), DataType::INT8);
  EXPECT_EQ(nccl_api::data_type(ncclUint8), DataType::UINT8);
  EXPECT_EQ(nccl_api::data_type(ncclInt32), DataType::INT32);
  EXPECT_EQ(nccl_api::data_type(ncclUint32), DataType::UINT32);
  EXPECT_EQ(nccl_api::data_type(ncclInt64), DataType::INT64);
  EXPECT_EQ(nccl_api::data_type(ncclUint64), DataType::UINT64);
  EXPECT_EQ(nccl_api::data_type(ncclFloat16), DataType::FLOAT16);
  EXPECT_EQ(nccl_api::data_type(ncclFloat32), DataType::FLOAT32);
  EXPECT_EQ(nccl_api::data_type(ncclFloat64), DataType::FLOAT64);
  EXPECT_EQ(nccl_api::data_type(ncclBfloat16), DataType::BFLOAT16);
  EXPECT_EQ(nccl_api::data_type(ncclFloat8e4m3), DataType::FLOAT8_E4M3);
  EXPECT_EQ(nccl_api::data_type(ncclFloat8e5m2), DataType::FLOAT8_E5M2);
  EXPECT_EQ(nccl_api::data_type(ncclNumTypes), DataType::UNKNOWN);
  EXPECT_EQ(sizeof(ncclResult_t), sizeof(nccl_api::Result));
  EXPECT_EQ(sizeof(ncclDataType_t), sizeof(nccl_api::DataTypeCode));
  EXPECT_EQ(sizeof(ncclComm_t), sizeof(nccl_api::Comm));
}

}  // namespace
}  // namespace trainsim::tracer
