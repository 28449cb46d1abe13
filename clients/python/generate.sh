#!/bin/sh
# generate.sh regenerates the protobuf and gRPC stubs of the jetgate package
# from proto/jetgate/v1/*.proto, with protoc and grpc_python_plugin
# (Debian: protobuf-compiler, protobuf-compiler-grpc). The stubs are
# committed; CI runs this and fails on any difference.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
plugin=${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin)}
# The proto's package is jetgate.v1, so the stubs land in jetgate/v1/ and
# import each other as jetgate.v1.*: the package's own subpackage.
rm -f "$here"/jetgate/v1/*_pb2.py "$here"/jetgate/v1/*_pb2_grpc.py
cd "$root/proto"
protoc -I . -I /usr/include \
  --python_out="$here" \
  --grpc_python_out="$here" \
  --plugin=protoc-gen-grpc_python="$plugin" \
  jetgate/v1/consumer.proto jetgate/v1/stream.proto
