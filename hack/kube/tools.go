//go:build tools

// Package kube pins the control-plane binaries that tests, demos and
// benchmarks run against: etcd, kube-apiserver and kube-controller-manager.
package kube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
