#!/bin/sh
# deb preinst, rpm %pre. Creates the system user kubegcd before the files
# are unpacked, so that dpkg and rpm, which take owners by name, give it
# /var/lib/kubegcd and group-read of /etc/kubegcd/kubegcd.conf. The line is
# that of /usr/lib/sysusers.d/kubegcd.conf, not unpacked yet (packaging/'s
# test keeps the two equal). DPKG_ROOT is dpkg's --root, as debhelper's
# snippets honour it.
set -e
if command -v systemd-sysusers >/dev/null 2>&1; then
	printf '%s\n' 'u kubegcd - "kubegcd daemon" /var/lib/kubegcd' |
		systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} --replace=/usr/lib/sysusers.d/kubegcd.conf -
else
	# useradd comes with Debian's passwd (priority required) and with every
	# RPM distribution; 9: the user exists.
	useradd ${DPKG_ROOT:+--prefix "$DPKG_ROOT"} --system --user-group --home-dir /var/lib/kubegcd \
		--no-create-home --shell /usr/sbin/nologin --comment "kubegcd daemon" kubegcd || [ $? -eq 9 ]
fi
