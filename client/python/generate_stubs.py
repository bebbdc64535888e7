#!/usr/bin/env python3
"""Generates coopd/_proto/ from proto/coop/v1/coop.proto with grpcio-tools.

The stubs are checked in, so `pip install ./client/python` needs no compiler; the test
tests/python/test_stubs.py regenerates them and fails when they drift from the .proto.
They are generated with grpcio-tools 1.62.3 (protobuf 4.25 code, no runtime version check), so
they load under every protobuf runtime from 4.21 to 7.x and every grpcio from 1.51 on.

usage: generate_stubs.py [OUT_DIR]   (default: this package's coopd/_proto)
"""

import os
import shutil
import sys
import tempfile

TOOLS_VERSION = "1.62.3"
HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "..", "proto")
FILES = ("coop_pb2.py", "coop_pb2.pyi", "coop_pb2_grpc.py")


def generate(out_dir: str) -> None:
    import grpc_tools
    from grpc_tools import protoc

    version = getattr(grpc_tools, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("grpcio-tools")
    if version != TOOLS_VERSION:
        raise SystemExit(f"generate_stubs: needs grpcio-tools=={TOOLS_VERSION}, found {version}")
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}", f"--pyi_out={tmp}",
                f"--grpc_python_out={tmp}", "coop/v1/coop.proto"]
        if protoc.main(args) != 0:
            raise SystemExit("generate_stubs: protoc failed")
        target = os.path.join(out_dir, "coop", "v1")
        os.makedirs(target, exist_ok=True)
        for name in FILES:
            with open(os.path.join(tmp, "coop", "v1", name), encoding="utf-8") as f:
                text = f.read()
            # The stubs live inside the coopd package, not at top level.
            text = text.replace("from coop.v1 import coop_pb2", "from coopd._proto.coop.v1 import coop_pb2")
            with open(os.path.join(target, name), "w", encoding="utf-8") as f:
                f.write(text)
        for pkg in (out_dir, os.path.join(out_dir, "coop"), target):
            open(os.path.join(pkg, "__init__.py"), "a").close()


if __name__ == "__main__":
    generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "coopd", "_proto"))
