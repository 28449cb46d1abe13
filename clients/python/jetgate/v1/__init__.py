"""Generated protobuf and gRPC stubs of jetgate.v1 (see ../../generate.sh)."""
