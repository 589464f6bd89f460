package app

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"
)

// client-go's klog lines go to the daemon started last; switching daemons
// while client-go logs is no data race (go test -race).
func TestKlogFollowsTheRunningDaemon(t *testing.T) {
	var first, second bytes.Buffer
	routeKlog(slog.New(slog.NewTextHandler(&first, nil)))
	klog.Background().Info("to the first")
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			klog.Background().V(0).Info("while switching")
		}
	})
	var mu sync.Mutex
	var sink bytes.Buffer
	for range 100 {
		routeKlog(slog.New(slog.NewTextHandler(lockedWriter{&mu, &sink}, nil)))
	}
	wg.Wait()
	routeKlog(slog.New(slog.NewTextHandler(&second, nil)))
	klog.Background().Info("to the second")
	if !strings.Contains(first.String(), "to the first") || strings.Contains(first.String(), "to the second") {
		t.Errorf("first daemon's log: %q", first.String())
	}
	if !strings.Contains(second.String(), "to the second") {
		t.Errorf("second daemon's log: %q", second.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
