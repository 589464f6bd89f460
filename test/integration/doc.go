// Package integration holds tests that run one controller of kubegcd,
// without the daemon, against a real etcd and kube-apiserver started for
// each test (bin/, make kube-bins). make test and make test-e2e run them;
// make test-unit does not.
package integration
