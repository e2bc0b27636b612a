#!/bin/sh
# keyless installer, shipped in the release archive beside bin/ and share/.
#
#   sh install.sh                 install into ~/.local (bin/keyless-host, share/keyless/)
#   sh install.sh --prefix DIR    install into DIR instead
#   sh install.sh --uninstall     take it all back (keyless-host install --uninstall)
#
# It checks the archive's SHA256SUMS, copies the binary, the extension and the dashboard, registers
# keyless-host with the Chrome-based browsers and Firefox on this machine (native messaging, so the
# extension pairs without a code), and prints the two steps left.
set -eu

prefix="${HOME:?HOME is not set}/.local"
uninstall=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a folder" >&2; exit 2; }; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) prefix="$(pwd)/$prefix" ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"

if [ "$uninstall" = 1 ]; then
  bin="$prefix/bin/keyless-host"
  [ -x "$bin" ] || bin="$here/bin/keyless-host"
  exec "$bin" install --uninstall
fi

os="$(uname -s)"
arch="$(uname -m)"
if [ "$os" != "Linux" ] || [ "$arch" != "x86_64" ]; then
  echo "install.sh: this archive is for Linux on x86_64; this machine is $os on $arch." >&2
  echo "  Build keyless from source there instead (see the README's Develop section)." >&2
  exit 1
fi

if command -v sha256sum >/dev/null 2>&1; then
  if ! (cd "$here" && sha256sum --check --quiet --strict SHA256SUMS); then
    echo "install.sh: the archive's files do not match SHA256SUMS; download it again." >&2
    exit 1
  fi
else
  echo "install.sh: sha256sum not found; the archive's checksums were not checked." >&2
fi

need="$(cat "$here/GLIBC" 2>/dev/null || echo "")"
have="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
if [ -n "$need" ] && [ -n "$have" ]; then
  low="$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)"
  if [ "$low" != "$need" ]; then
    echo "install.sh: keyless-host needs glibc $need or newer; this machine has $have." >&2
    exit 1
  fi
fi

mkdir -p "$prefix/bin" "$prefix/share/keyless"
# The binary: copied beside, then renamed over (a running serve keeps its old file).
cp "$here/bin/keyless-host" "$prefix/bin/.keyless-host.new"
chmod 0755 "$prefix/bin/.keyless-host.new"
mv -f "$prefix/bin/.keyless-host.new" "$prefix/bin/keyless-host"
for part in extension extension-firefox www; do
  rm -rf "$prefix/share/keyless/.$part.new"
  cp -R "$here/share/keyless/$part" "$prefix/share/keyless/.$part.new"
  rm -rf "$prefix/share/keyless/$part"
  mv "$prefix/share/keyless/.$part.new" "$prefix/share/keyless/$part"
done
# The documentation: the README and docs/ as they are in the archive (the README links into docs/).
rm -rf "$prefix/share/keyless/doc"
mkdir -p "$prefix/share/keyless/doc"
cp "$here/README.md" "$prefix/share/keyless/doc/README.md"
cp -R "$here/docs" "$prefix/share/keyless/doc/docs"

"$prefix/bin/keyless-host" install \
  --record-binary "$prefix/bin/keyless-host" \
  --record-share "$prefix/share/keyless"

version="$("$prefix/bin/keyless-host" --version 2>/dev/null | awk '{print $2}')"
echo
echo "keyless $version is installed:"
echo "  $prefix/bin/keyless-host"
echo "  $prefix/share/keyless/extension   (the Chrome extension)"
echo "  $prefix/share/keyless/extension-firefox   (the same extension, built for Firefox)"
echo "  $prefix/share/keyless/doc/README.md   (how to use it; the rest of the docs beside it)"
case ":${PATH:-}:" in
  *":$prefix/bin:"*) ;;
  *) echo "  $prefix/bin is not on your PATH: add  export PATH=\"$prefix/bin:\$PATH\"  to your shell's profile." ;;
esac
echo
echo "Two steps left:"
echo "  1. In Chrome or Chromium open chrome://extensions, switch on Developer mode, press"
echo "     \"Load unpacked\" and choose $prefix/share/keyless/extension"
echo "     (Firefox: open about:debugging#/runtime/this-firefox, press \"Load Temporary Add-on...\" and"
echo "     choose $prefix/share/keyless/extension-firefox/manifest.json)"
echo "  2. In your project (a git repository) run:  keyless-host serve"
echo "     then open ChatGPT, Claude, Gemini or AI Studio, click the keyless icon, type a task and press Start."
echo
echo "To remove keyless:  keyless-host install --uninstall"
