package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

const (
	namespaces = 10
	// ownerEvery: ConfigMap i with i%ownerEvery == ownerEvery-1 is owned by
	// ConfigMap i-(ownerEvery-1), in the same namespace.
	ownerEvery    = 10
	createRetries = 5
)

// creator fills the cluster with small ConfigMaps, spread over namespaces,
// every tenth owned by another so that owner edges are exercised.
type creator struct {
	kube    kubernetes.Interface
	workers int
	uids    []types.UID // by ConfigMap index, for owner references
}

func namespaceName(i int) string { return fmt.Sprintf("bench-%d", i) }

// namespaceOf keeps each block of ownerEvery ConfigMaps in one namespace, so
// every owner is in its dependents' namespace.
func namespaceOf(i int) string { return namespaceName(i / ownerEvery % namespaces) }

func configMapName(i int) string { return fmt.Sprintf("cm-%06d", i) }

func (c *creator) createNamespaces(ctx context.Context) error {
	for i := range namespaces {
		if err := createNamespace(ctx, c.kube, namespaceName(i)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// createNamespace creates namespace name; it fails if name exists.
func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// createDefaultServiceAccount creates namespace ns's default
// ServiceAccount, which pods need. No controller makes it here.
func createDefaultServiceAccount(ctx context.Context, kube kubernetes.Interface, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	return err
}

// createUpTo creates ConfigMaps len(c.uids)..n-1: owners and plain ones
// first, then the dependents, which need their owner's UID.
func (c *creator) createUpTo(ctx context.Context, n int) error {
	from := len(c.uids)
	if n <= from {
		return nil
	}
	c.uids = append(c.uids, make([]types.UID, n-from)...)
	var owners, dependents []int
	for i := from; i < n; i++ {
		if i%ownerEvery == ownerEvery-1 {
			dependents = append(dependents, i)
		} else {
			owners = append(owners, i)
		}
	}
	for _, batch := range [][]int{owners, dependents} {
		if err := c.parallel(ctx, batch, c.create); err != nil {
			return err
		}
	}
	return nil
}

// parallel runs fn for every index on c.workers goroutines and returns the
// first error, after which the remaining indices are skipped.
func (c *creator) parallel(ctx context.Context, indices []int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(indices) || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, indices[k]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// create creates ConfigMap i, retrying transient failures; one left by an
// earlier, interrupted attempt is reused.
func (c *creator) create(ctx context.Context, i int) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: configMapName(i), Namespace: namespaceOf(i)},
		Data:       map[string]string{"key": fmt.Sprintf("value-%d", i)},
	}
	if i%ownerEvery == ownerEvery-1 {
		o := i - (ownerEvery - 1)
		cm.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: configMapName(o), UID: c.uids[o],
		}}
	}
	client := c.kube.CoreV1().ConfigMaps(cm.Namespace)
	for attempt := 1; ; attempt++ {
		created, err := client.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = client.Get(ctx, cm.Name, metav1.GetOptions{})
		}
		if err == nil {
			c.uids[i] = created.UID
			return nil
		}
		if attempt == createRetries || !transient(err) || ctx.Err() != nil {
			return fmt.Errorf("create configmap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func transient(err error) bool {
	var netErr net.Error
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || errors.As(err, &netErr)
}

// createRetrying creates an object with create and retries transient
// failures. When an earlier attempt timed out but did create the object,
// get reads it back.
func createRetrying[T any](ctx context.Context, create, get func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		obj, err := create()
		if apierrors.IsAlreadyExists(err) && attempt > 1 {
			obj, err = get()
		}
		if err == nil || attempt == createRetries || !transient(err) || ctx.Err() != nil {
			return obj, err
		}
		if err := sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
			return obj, err
		}
	}
}

// seq returns the indices 0 to n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
