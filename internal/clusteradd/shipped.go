// Package clusteradd is kubegcd cluster add and remove: with the caller's
// own (admin) credentials, once, it gives kubegcd an identity of its own in
// a cluster, bound by the rights deploy/clusterrole.yaml grants, and writes
// the kubeconfig of that identity, and for a named instance of the
// template unit kubegcd@.service its config file. remove undoes it.
package clusteradd

import _ "embed"

// deploy/ is a module of its own, out of go:embed's reach: these are
// copies of its files, which go generate refreshes and TestShippedCopies
// holds equal to them.
//
//go:generate cp ../../deploy/clusterrole.yaml ../../deploy/kubegcd.conf .

// shippedRBAC is deploy/clusterrole.yaml: the ClusterRole, the
// leader-election Role and their bindings.
//
//go:embed clusterrole.yaml
var shippedRBAC []byte

// shippedConf is deploy/kubegcd.conf, the example config file.
//
//go:embed kubegcd.conf
var shippedConf []byte
