#!/bin/sh
# deb prerm (remove, upgrade, ...), rpm %preun (0: erase, 1: upgrade). Stops
# kubegcd and its instances before the binary goes; an upgrade restarts them
# afterwards.
set -e
[ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] || exit 0
case "$1" in
remove) deb-systemd-invoke stop kubegcd.service >/dev/null || true ;;
# rpm has no purge to forget the enablement: disable it now.
0) systemctl --no-reload disable --now kubegcd.service >/dev/null 2>&1 || true ;;
esac
# The instances of kubegcd@.service (one per cluster) stop too; their
# enablement outlives the package, as their files in /etc/kubegcd do.
case "$1" in
remove | 0) systemctl stop 'kubegcd@*.service' >/dev/null 2>&1 || true ;;
esac
