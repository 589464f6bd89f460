package e2efaults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestLeaderLoss takes the leader's Lease while it works through pending
// garbage: after its renew deadline it must have stopped writing, and said
// so (exit 1 with one line); a new kubegcd on the same database takes the
// Lease once the thief's expires and finishes the work.
func TestLeaderLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "leader")
	const garbage, renewDeadline = 150, 4 * time.Second
	owner := ref("gone", uuid.NewUUID())
	for i := range garbage {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dep-" + strconv.Itoa(i), OwnerReferences: []metav1.OwnerReference{owner}}}
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		l, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range l.Items {
			if strings.HasPrefix(s.Name, "dep-") {
				n++
			}
		}
		return n
	}
	// Slow writes, so that garbage is still pending when the Lease goes.
	kubeconfig := kubeconfig(t, cluster.Config.Host, confinedToken(t, ns))
	args := []string{"--dry-run=false", "--controllers=ownergc", "--kube-api-qps=10", "--kube-api-burst=1",
		"--leader-elect-namespace=" + ns, "--leader-elect-lease-duration=6s",
		"--leader-elect-renew-deadline=" + renewDeadline.String(), "--leader-elect-retry-period=1s"}
	d := daemons.WithKubeconfig(kubeconfig).Start(t, "", args...)
	eventually(t, 30*time.Second, func() error {
		if n := left(); n > garbage-10 {
			return fmt.Errorf("%d of %d dependents collected", garbage-n, garbage)
		}
		return nil
	})

	takenWith := left()
	leases := kube.CoordinationV1().Leases(ns)
	eventually(t, 10*time.Second, func() error {
		l, err := leases.Get(ctx, "kubegcd", metav1.GetOptions{})
		if err != nil {
			return err
		}
		thief, now, dur := "thief", metav1.NewMicroTime(time.Now()), int32(8)
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &thief, &now, &now, &dur
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err // a conflict with a renewal: again
	})
	deadline := time.Now().Add(renewDeadline)

	eventually(t, 30*time.Second, func() error {
		if _, exited := d.Exited(); !exited {
			return fmt.Errorf("still running without its Lease")
		}
		return nil
	})
	if code, _ := d.Exited(); code != 1 || !strings.Contains(d.Logs.String(), "lost the leader-election lease") {
		t.Fatalf("exit %d; want 1, and the log saying that it lost the lease:\n%s", code, d.Logs.String())
	}
	// Past the deadline (and the requests in flight at it), the API server
	// serves no more deletes of the dependents.
	eventually(t, renewDeadline+5*time.Second, func() error {
		if time.Since(deadline) < time.Second {
			return fmt.Errorf("before the renew deadline")
		}
		return nil
	})
	// The deletes the API server carried out or answered for the object
	// (404, 409): a write refused for want of rights (403) never reached it.
	secretDeletes := func() float64 { return e2eutil.APIDeletes(t, kube, "secrets").Sum("200", "404", "409") }
	deletes := secretDeletes()
	pending := left()
	stable(t, 3*time.Second, func() error {
		if n := secretDeletes(); n != deletes {
			return fmt.Errorf("%v deletes of secrets after the renew deadline", n-deletes)
		}
		return nil
	})
	if pending == 0 {
		t.Fatalf("every dependent was collected before the Lease was taken; the test proves nothing")
	}
	t.Logf("the Lease was taken with %d of %d dependents left; %d were left when the old leader stopped", takenWith, garbage, pending)

	// Recovery: a new instance on the same database leads once the thief's
	// Lease expires, and collects the rest.
	d2 := daemons.WithKubeconfig(kubeconfig).Start(t, d.DBPath, args...)
	eventually(t, 90*time.Second, func() error {
		if n := left(); n > 0 {
			return fmt.Errorf("%d dependents left", n)
		}
		return nil
	})
	if s := status(t, d2); !s.Leader {
		t.Errorf("/status: not the leader after collecting")
	}
}

// TestLeaderCutOff cuts the leader off the API server, as in an outage
// with the default leader election: it cannot renew, so it must stop
// writing at its renew deadline and exit 1 saying so, before its Lease
// expires for another instance. Once the API server is back, a restart
// on the same database leads again and collects what became garbage.
func TestLeaderCutOff(t *testing.T) {
	t.Parallel()
	ns := namespaces.New(t, "leader-cut")
	p := newProxy(t)
	kubeconfig := p.Kubeconfig(confinedToken(t, ns))
	args := []string{"--dry-run=false", "--controllers=ownergc", "--leader-elect-namespace=" + ns,
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}
	d := daemons.WithKubeconfig(kubeconfig).Start(t, "", args...)
	eventually(t, 30*time.Second, func() error {
		if !status(t, d).Leader {
			return fmt.Errorf("not the leader yet")
		}
		return nil
	})

	p.Cut()
	orphan := createCM(t, ns, "orphan", ref("never-was", uuid.NewUUID()))
	eventually(t, 30*time.Second, func() error {
		if _, exited := d.Exited(); !exited {
			return fmt.Errorf("still running, cut off from the API server")
		}
		return nil
	})
	if code, _ := d.Exited(); code != 1 || !strings.Contains(d.Logs.String(), "lost the leader-election lease") {
		t.Fatalf("exit %d; want 1, and the log saying that it lost the lease:\n%s", code, d.Logs.String())
	}
	if !cmExists(t, ns, "orphan", orphan.UID) {
		t.Fatalf("the orphan was collected while its only collector was cut off")
	}

	p.Restore()
	d2 := daemons.WithKubeconfig(kubeconfig).Start(t, d.DBPath, args...)
	eventually(t, 60*time.Second, func() error {
		if cmExists(t, ns, "orphan", orphan.UID) {
			return fmt.Errorf("the orphan is still there")
		}
		return nil
	})
	if !status(t, d2).Leader {
		t.Errorf("/status: not the leader after collecting")
	}
}
