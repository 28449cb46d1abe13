#!/bin/sh
# ci.sh is the Python client's CI: it installs the Debian packages it needs
# (when missing; as root, as CI runs it), checks that the generated stubs are
# those generate.sh makes from proto/, and runs the tests against a real
# jetgate built from this repository (Go needed). Any failure, and pytest
# finding no test (its exit status 5), fails it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3

# libprotobuf-dev holds the well-known types (google/protobuf/*.proto) protoc
# reads from /usr/include; python3-venv, python3-setuptools and python3-wheel
# are what the install test (tests/test_install.py) needs to pip install the
# package into a fresh virtual environment without a package index.
need="python3-grpcio python3-protobuf python3-pytest python3-venv python3-setuptools python3-wheel protobuf-compiler protobuf-compiler-grpc libprotobuf-dev"
missing=""
for p in $need; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "ci.sh: missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
fi

echo "ci.sh: generated stubs are fresh"
"$here/generate.sh"
cd "$root"
git diff --exit-code -- clients/python/jetgate/v1
untracked=$(git ls-files --others --exclude-standard -- clients/python/jetgate/v1)
if [ -n "$untracked" ]; then
  echo "ci.sh: generate.sh made files that are not committed: $untracked" >&2
  exit 1
fi

echo "ci.sh: pytest"
cd "$here"
status=0
# A test that hangs prints every thread's stack after 5 minutes.
"$py" -m pytest -q -p no:cacheprovider -o faulthandler_timeout=300 tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "ci.sh: pytest found no tests" >&2
fi
exit "$status"
