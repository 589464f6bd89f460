//go:build tools

// Package kwok pins kwok, which simulates nodes and pods against the real
// kube-apiserver for the scale benchmark (hack/bench --run scale), and the
// stage files of the same release (kustomize/stage/ in its module). It is a
// module of its own so that kwok's dependencies stay out of hack/kube's.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
