#!/bin/sh
# deb postrm (remove, purge, upgrade, ...), rpm %postun (0: erase, 1:
# upgrade). The database in /var/lib/kubegcd stays, even on purge: it holds
# the audit history of what kubegcd deleted.
set -e
[ -z "${DPKG_ROOT:-}" ] || exit 0
if [ "$1" = purge ] && command -v deb-systemd-helper >/dev/null 2>&1; then
	deb-systemd-helper purge kubegcd.service >/dev/null || true
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
	# rpm upgrade: restart a running kubegcd, and its running instances,
	# on the new binary.
	if [ "$1" = 1 ]; then
		systemctl try-restart kubegcd.service 'kubegcd@*.service' >/dev/null || true
	fi
fi
