#!/bin/sh
# deb postinst (configure [OLD-VERSION]), rpm %post (1: install, 2: upgrade).
# Never enables or starts kubegcd: it needs a kubeconfig first
# (docs/operations.md, Install).
set -e
# Under dpkg --root (DPKG_ROOT) nothing runs there to tell.
[ -z "${DPKG_ROOT:-}" ] || exit 0
if [ "$1" = configure ] && command -v deb-systemd-helper >/dev/null 2>&1; then
	# Record the enablement symlinks an operator makes, so that purge
	# removes them (dh_installsystemd --no-enable does the same).
	deb-systemd-helper update-state kubegcd.service >/dev/null || true
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
	# A deb upgrade restarts a running kubegcd, and each running instance
	# of kubegcd@.service, on the new binary (rpm: in %postun); a stopped
	# one stays stopped.
	if [ "$1" = configure ] && [ -n "${2:-}" ]; then
		deb-systemd-invoke try-restart kubegcd.service >/dev/null || true
		systemctl try-restart 'kubegcd@*.service' >/dev/null || true
	fi
fi
