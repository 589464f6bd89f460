package ownergc

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/reconcile"
)

func TestConflictBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		// conflicts in a row before the one whose delay is asked
		before int
		forget bool // the item succeeded in between
		want   time.Duration
	}{
		{name: "first conflict", before: 0, want: 200 * time.Millisecond},
		{name: "second", before: 1, want: 400 * time.Millisecond},
		{name: "third", before: 2, want: 800 * time.Millisecond},
		{name: "tenth", before: 9, want: 102400 * time.Millisecond},
		{name: "eleventh", before: 10, want: 204800 * time.Millisecond},
		{name: "capped at five minutes", before: 11, want: 5 * time.Minute},
		{name: "still capped", before: 60, want: 5 * time.Minute},
		{name: "a success starts again", before: 5, forget: true, want: 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newConflictBackoff()
			for range tc.before {
				b.When(item{uid: "uid"})
			}
			if tc.forget {
				b.Forget(item{uid: "uid"})
			}
			if got := b.When(item{uid: "uid"}); got != tc.want {
				t.Errorf("delay after %d conflicts (forgotten %v) = %s, want %s", tc.before, tc.forget, got, tc.want)
			}
			if got := b.When(item{uid: "another-uid"}); got != conflictBaseDelay {
				t.Errorf("another item's first delay = %s, want %s: the backoff is per item", got, conflictBaseDelay)
			}
		})
	}
}

func TestPathNotServed(t *testing.T) {
	sprockets := schema.GroupResource{Group: "pathgone.kubegcd.io", Resource: "sprockets"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "no error", err: nil, want: false},
		{name: "missing object: a Status naming it", err: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "owner"), want: false},
		{name: "missing custom resource", err: apierrors.NewNotFound(sprockets, "owner"), want: false},
		{name: "missing object, wrapped", err: fmt.Errorf("verifying: %w", apierrors.NewNotFound(sprockets, "owner")), want: false},
		// What client-go's metadata client makes of kube-apiserver's
		// text/plain "404 page not found" for a path it does not serve
		// (it builds paths with AbsPath, so it knows no resource or name).
		{name: "unserved path: bare 404", err: apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", schema.GroupResource{}, "",
			"404 page not found", 0, true), want: true},
		{name: "404 Status without details", err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}, want: true},
		{name: "NotFound naming another object is no proof", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns1"), want: true},
		{name: "conflict", err: apierrors.NewConflict(sprockets, "owner", errors.New("changed")), want: false},
		{name: "other error", err: errors.New("connection refused"), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reconcile.PathNotServed(tc.err, "owner"); got != tc.want {
				t.Errorf("PathNotServed(%v) = %v, want %v", tc.err, got, tc.want)
			}
			gvr := sprockets.WithVersion("v1")
			err := unservedPath(tc.err, gvr, "owner")
			if got := isUnknownKind(err); got != tc.want {
				t.Errorf("unservedPath(%v) = %v, retried after discovery %v, want %v", tc.err, err, got, tc.want)
			}
			// Only a proven absence may still read as NotFound: the applier
			// counts a NotFound write as done.
			if tc.want && apierrors.IsNotFound(err) {
				t.Errorf("unservedPath(%v) = %v still reads as NotFound", tc.err, err)
			}
		})
	}
}

func TestStaleVersions(t *testing.T) {
	type op struct {
		do       string // add, has, forget
		uid, rv  string
		wantHas  bool
		wantKept []string // uid's versions after the op (none: forgotten)
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{name: "unknown object is not stale", ops: []op{
			{do: "has", uid: "a", rv: "1", wantHas: false},
		}},
		{name: "the refused version is stale while the mirror shows it", ops: []op{
			{do: "add", uid: "a", rv: "1", wantKept: []string{"1"}},
			{do: "has", uid: "a", rv: "1", wantHas: true, wantKept: []string{"1"}},
			{do: "has", uid: "a", rv: "1", wantHas: true, wantKept: []string{"1"}},
			{do: "has", uid: "b", rv: "1", wantHas: false},
		}},
		{name: "a refusal of the live copy keeps the mirror's version stale", ops: []op{
			{do: "add", uid: "a", rv: "1", wantKept: []string{"1"}},
			{do: "add", uid: "a", rv: "5", wantKept: []string{"1", "5"}},
			{do: "add", uid: "a", rv: "5", wantKept: []string{"1", "5"}},
			{do: "has", uid: "a", rv: "1", wantHas: true, wantKept: []string{"1", "5"}},
		}},
		{name: "the mirror caught up", ops: []op{
			{do: "add", uid: "a", rv: "1", wantKept: []string{"1"}},
			{do: "has", uid: "a", rv: "7", wantHas: false},
			{do: "has", uid: "a", rv: "1", wantHas: false},
		}},
		{name: "the object left the mirror", ops: []op{
			{do: "add", uid: "a", rv: "1", wantKept: []string{"1"}},
			{do: "forget", uid: "a"},
			{do: "has", uid: "a", rv: "1", wantHas: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s staleVersions
			for i, o := range tc.ops {
				switch o.do {
				case "add":
					s.add(o.uid, o.rv)
				case "has":
					if got := s.has(o.uid, o.rv); got != o.wantHas {
						t.Fatalf("op %d: has(%s, %s) = %v, want %v", i, o.uid, o.rv, got, o.wantHas)
					}
				case "forget":
					s.forget(o.uid)
				}
				if got := s.m[o.uid]; !slices.Equal(got, o.wantKept) {
					t.Fatalf("op %d (%s %s %s): versions kept %v, want %v", i, o.do, o.uid, o.rv, got, o.wantKept)
				}
			}
		})
	}
}

func TestStaleVersionsBounded(t *testing.T) {
	var s staleVersions
	for i := range maxStale + 1 {
		s.add(fmt.Sprint(i), "1")
	}
	if len(s.m) > maxStale {
		t.Fatalf("%d objects remembered, want at most %d", len(s.m), maxStale)
	}
	if !s.has(fmt.Sprint(maxStale), "1") {
		t.Fatal("the version added last was forgotten")
	}
}
