#!/usr/bin/env python3
"""Writes handmade.0.et and handmade.1.et: two ranks' Chakra execution traces encoded byte by byte
from the public field numbers of mlcommons/chakra's schema/protobuf/et_def.proto (et_def_fields.txt
beside this file), without protobuf or any generated code, so that the import is tested against the
public format rather than against trainsim's own writer. tests/calibrate/chakra_workload_test.cpp
reads them; run this script to regenerate them (the output is deterministic).

Rank 0: a process-group metadata node, a 100 us GPU kernel, a 30 us CPU operator, an all-reduce of
1 MiB over process group "7" (ranks 0 and 1), a send of 4 KiB to rank 1 (tag 5), a kernel given by
its FLOPs and bytes only, and a kernel with nothing to time it. Rank 1: a 50 us kernel, the same
all-reduce, and the matching receive, listed before the all-reduce it depends on.
"""
import pathlib
import struct

VARINT, I64, LEN = 0, 1, 2


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(number, wire):
    return varint(number << 3 | wire)


def f_varint(number, v):
    return key(number, VARINT) + varint(v)


def f_len(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(number, LEN) + varint(len(payload)) + payload


def f_double(number, v):
    return key(number, I64) + struct.pack("<d", v)


def packed(number, values):
    return f_len(number, b"".join(varint(v) for v in values))


# AttributeProto: name 1; int32_val 7; int64_val 9; uint64_val 13; bool_val 27; string_val 29.
def attr_int64(name, v):
    return f_len(1, name) + f_varint(9, v)


def attr_int32(name, v):
    return f_len(1, name) + f_varint(7, v)


def attr_uint64(name, v):
    return f_len(1, name) + f_varint(13, v)


def attr_bool(name, v):
    return f_len(1, name) + f_varint(27, 1 if v else 0)


def attr_string(name, v):
    return f_len(1, name) + f_len(29, v)


# NodeType: METADATA_NODE 1, COMP_NODE 4, COMM_SEND_NODE 5, COMM_RECV_NODE 6, COMM_COLL_NODE 7.
# Node: id 1, name 2, type 3, ctrl_deps 4, data_deps 5, duration_micros 7, inputs 8 (IOInfo: values 1), attr 10.
def node(id_, name, type_, data_deps=(), ctrl_deps=(), duration=0, attrs=(), inputs=None):
    out = f_varint(1, id_) + f_len(2, name) + f_varint(3, type_)
    if ctrl_deps:
        out += packed(4, ctrl_deps)
    if data_deps:
        out += packed(5, data_deps)
    if duration:
        out += f_varint(7, duration)
    if inputs is not None:
        out += f_len(8, f_len(1, inputs))
    for a in attrs:
        out += f_len(10, a)
    return out


def delimited(message):
    return varint(len(message)) + message


# GlobalMetadata: version 1, attr 2.
METADATA = f_len(1, "0.0.4") + f_len(2, attr_string("schema", "hand-made from the public field numbers"))
PG_INIT = node(0, "## process_group:init ##", 1,
               inputs="['[{\"pg_name\": \"0\", \"ranks\": []}, {\"pg_name\": \"7\", \"ranks\": [0, 1]}]']")
ALL_REDUCE = [attr_bool("is_cpu_op", False), attr_int64("comm_type", 0), attr_int64("comm_size", 1 << 20),
              attr_string("pg_name", "7")]

RANK0 = [
    PG_INIT,
    node(1, "fwd kernel", 4, data_deps=[0], duration=100, attrs=[attr_bool("is_cpu_op", False)]),
    node(2, "aten::cpu_op", 4, data_deps=[1], ctrl_deps=[1], duration=30, attrs=[attr_bool("is_cpu_op", True)]),
    node(3, "ncclDevKernel_AllReduce", 7, data_deps=[1], attrs=ALL_REDUCE),
    node(4, "ncclDevKernel_SendRecv", 5, data_deps=[3],
         attrs=[attr_int32("comm_src", 0), attr_int32("comm_dst", 1), attr_int32("comm_tag", 5), attr_int64("comm_size", 4096)]),
    node(5, "bwd kernel by FLOPs", 4, data_deps=[4],
         attrs=[attr_int64("num_ops", 10**12), attr_uint64("tensor_size", 10**6)]),
    node(6, "untimed kernel", 4, data_deps=[5]),
]
RANK1 = [
    PG_INIT,
    node(1, "fwd kernel", 4, data_deps=[0], duration=50),
    node(9, "ncclDevKernel_SendRecv", 6, data_deps=[3],
         attrs=[attr_int32("comm_src", 0), attr_int32("comm_dst", 1), attr_int32("comm_tag", 5), attr_int64("comm_size", 4096)]),
    node(3, "ncclDevKernel_AllReduce", 7, data_deps=[1], attrs=ALL_REDUCE),
]

here = pathlib.Path(__file__).resolve().parent
for rank, nodes in enumerate([RANK0, RANK1]):
    (here / f"handmade.{rank}.et").write_bytes(delimited(METADATA) + b"".join(delimited(n) for n in nodes))
