#!/bin/sh
# deb prerm (remove, upgrade, ...), rpm %preun (0: erase, 1: upgrade). Stops
# kubegcd before its binary goes; an upgrade restarts it afterwards.
set -e
[ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] || exit 0
case "$1" in
remove) deb-systemd-invoke stop kubegcd.service >/dev/null || true ;;
# rpm has no purge to forget the enablement: disable it now.
0) systemctl --no-reload disable --now kubegcd.service >/dev/null 2>&1 || true ;;
esac
