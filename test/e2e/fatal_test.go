package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/dbfault"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// filledDB makes a migrated database at path holding a few thousand
// objects, so that its tables span many pages.
func filledDB(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]*db.Object, 3000)
	for i := range objs {
		objs[i] = &db.Object{UID: fmt.Sprintf("uid-%05d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns",
			Name: fmt.Sprintf("cm-%05d", i), ResourceVersion: "1"}
	}
	epoch, err := store.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Mirror().WriteListPage(ctx, rid, epoch, objs); err != nil {
		t.Fatal(err)
	}
}

// outsideConn opens the database as another SQLite program would.
func outsideConn(t *testing.T, path string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// garble overwrites pages first..last (1-based; last 0: to the end of the
// file) with garbage.
func garble(t *testing.T, path string, first, last int64) {
	t.Helper()
	var pageSize int64
	if err := outsideConn(t, path).QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	end := st.Size()
	if last > 0 {
		end = min(end, last*pageSize)
	}
	start := (first - 1) * pageSize
	if end <= start {
		t.Fatalf("%s has %d bytes: no page %d", path, st.Size(), first)
	}
	dbfault.Garble(t, path, start, end-start)
}

// A database whose header is sound but whose objects table is garbage
// passes the migrations; kubegcd used to start on it, fail to mirror, and
// stay up with /healthz 200. It must refuse to start, in one line.
func TestCorruptDatabaseRefusedAtStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.db")
	filledDB(t, path)
	var root int64
	if err := outsideConn(t, path).QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = 'objects'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	garble(t, path, root, root)

	start := time.Now()
	code, _, stderr := runBinary(t, 20*time.Second, "run", "--kubeconfig", cluster.Kubeconfig, "--db", path,
		"--listen", freeAddr(t))
	want := "kubegcd: database " + path + " is corrupt (PRAGMA quick_check: "
	if code != 3 || !strings.HasPrefix(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.HasSuffix(stderr, "); restore it from a backup or move it away to start afresh\n") {
		t.Fatalf("exit %d, stderr %q; want 3 and one line %q…", code, stderr, want)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to refuse a corrupt database", took)
	}
}

// The file goes bad under a running daemon (a failing disk, another
// program writing into it): the first write that finds it must end the
// run, exit 3 and say why, rather than leave a daemon that serves /healthz
// and mirrors nothing.
func TestCorruptionWhileRunningEndsTheRun(t *testing.T) {
	t.Parallel()
	ns := namespaces.New(t, "corrupt-while-running")
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)

	// Move every page into the main file, garble all but the header page,
	// and commit from outside so that kubegcd's connections drop their page
	// caches and read the garbage.
	conn := outsideConn(t, d.DBPath)
	eventually(t, 30*time.Second, func() error {
		var busy, logged, moved int
		if err := conn.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
			return fmt.Errorf("checkpoint: busy %d, %w", busy, err)
		}
		return nil
	})
	garble(t, d.DBPath, 2, 0)
	if _, err := conn.Exec(`PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	// A change in the cluster makes kubegcd write.
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-the-damage"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, func() error {
		if _, exited := d.Exited(); !exited {
			return fmt.Errorf("kubegcd still running on a corrupt database")
		}
		return nil
	})
	code, _ := d.Exited()
	logs := d.Logs.String()
	last := tail(logs, 1)
	want := "kubegcd: database " + d.DBPath + " is corrupt ("
	if code != 3 || !strings.HasPrefix(last, want) || !strings.Contains(logs, `msg="stopping: a part of kubegcd failed" part=database`) {
		t.Fatalf("exit %d, last line %q; want 3, %q… and the reason logged:\n%s", code, last, want, tail(logs, 30))
	}
}

// ingest.Run returning an error used to be read only at shutdown: the
// daemon stayed up, mirroring nothing. Here it fails because another
// program holds the database's write lock for longer than the busy timeout
// as kubegcd starts.
func TestIngestFailureEndsTheRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.db")
	filledDB(t, path)
	dbfault.HoldWriteLock(t, path)

	code, _, stderr := runBinary(t, 60*time.Second, "run", "--kubeconfig", cluster.Kubeconfig, "--db", path,
		"--listen", freeAddr(t), "--log-format", "json")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.HasPrefix(last, "kubegcd: ingest: ") || !strings.Contains(last, "database is locked") ||
		!strings.Contains(stderr, `"msg":"stopping: a part of kubegcd failed","part":"ingest"`) {
		t.Fatalf("exit %d, last line %q; want 1, the ingest error and the reason logged:\n%s", code, last, tail(stderr, 20))
	}
}

// A password in the API server's URL must reach neither stderr nor the log.
func TestServerPasswordIsNotPrinted(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	kubeconfig := func(name, server string) string {
		return writeFile(t, name, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server, cluster.Token))
	}
	for _, tc := range []struct {
		name, server, want string
	}{
		// The user and password leave the URL before anything uses it:
		// beside the kubeconfig's token they are not sent at all.
		{"unreachable", "https://kubegcd:" + secret + "@127.0.0.1:1", "cannot reach the API server at https://127.0.0.1:1 "},
		{"malformed", "https://kubegcd:" + secret + "@127.0.0.1:port", "https://127.0.0.1:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runBinary(t, 30*time.Second, "run", "--kubeconfig", kubeconfig(tc.name, tc.server),
				"--db", filepath.Join(t.TempDir(), "k.db"), "--listen", freeAddr(t), "--startup-timeout", "2s")
			if code != 1 || strings.Contains(stderr, secret) || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1, %q and no password", code, stderr, tc.want)
			}
		})
	}

	t.Run("reachable", func(t *testing.T) {
		// The kubeconfig's token is sent, not the URL's password: the
		// daemon syncs, and says in one warning what it left out.
		server := strings.Replace(cluster.Config.Host, "https://", "https://kubegcd:"+secret+"@", 1)
		d := e2eutil.DaemonOptions{Kubeconfig: kubeconfig("reachable", server)}.Start(t, "")
		d.WaitReady(t, 2*time.Minute)
		want := "the user and password in the kubeconfig's server URL are not sent"
		if logs := d.Logs.String(); !strings.Contains(logs, want) {
			t.Errorf("no warning %q in the log:\n%s", want, tail(logs, 30))
		}
		if logs := d.Logs.String(); strings.Contains(logs, secret) {
			t.Fatalf("the password is in the log:\n%s", logs)
		}
	})
}

// As before the run became a group: a leader whose lease another holder
// took stops every write and exits 1 with one line saying so.
func TestLostLeaseEndsTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "kubegcd-e2e-lost"
	leases := kube.CoordinationV1().Leases("kube-system")
	t.Cleanup(func() { _ = leases.Delete(ctx, name, metav1.DeleteOptions{}) })
	// svgc: leader election needs an enforcing instance, and svgc touches
	// nothing the tests running beside this one make (see mustEnforceAlone).
	in := startInstance(t, "lost", "--controllers=svgc", "--leader-elect-name="+name,
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s")
	leaderOf(t, 30*time.Second, in)

	eventually(t, 10*time.Second, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		thief, now, hour := "thief", metav1.NewMicroTime(time.Now()), int32(3600)
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &thief, &now, &now, &hour
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err // a conflict with a renewal: again
	})
	eventually(t, 30*time.Second, func() error {
		select {
		case <-in.k.Done():
			return nil
		default:
			return fmt.Errorf("still running without its lease")
		}
	})
	logs, err := os.ReadFile(in.k.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	last := tail(string(logs), 1)
	want := "kubegcd: lost the leader-election lease; stopped every write and exiting so that a restart rejoins as a follower"
	if !errors.As(in.k.Err(), &ee) || ee.ExitCode() != 1 || last != want {
		t.Fatalf("exit %v, last line %q; want exit status 1 and %q", in.k.Err(), last, want)
	}
}
