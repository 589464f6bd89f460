package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriterAlive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Another process holding the write lock makes writes wait and fail
	// after the busy timeout; between them, the writer answers.
	outside, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Close() })
	conn, err := outside.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() {
		failed <- d.inWriteTx(context.Background(), writeOp{name: "blocked"}, func(tx *sql.Tx) error { return nil })
	}()
	if err := <-failed; err == nil {
		t.Fatal("a write with the lock held outside succeeded")
	}
	if err := d.WriterAlive(ctx); err != nil {
		t.Errorf("WriterAlive with the write lock held outside = %v, want nil", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// A writer stuck in one write does not answer.
	release := make(chan struct{})
	stuck := make(chan struct{})
	go func() {
		_ = d.inWriteTx(context.Background(), writeOp{name: "stuck"}, func(*sql.Tx) error {
			close(stuck)
			<-release
			return nil
		})
	}()
	<-stuck
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	err = d.WriterAlive(short)
	close(release)
	if err == nil || !strings.HasPrefix(err.Error(), "database writer: no answer within ") {
		t.Errorf("WriterAlive with the writer stuck = %v, want no answer", err)
	}
	if err := d.WriterAlive(ctx); err != nil {
		t.Errorf("WriterAlive once unstuck = %v, want nil", err)
	}

	d.Close()
	if err := d.WriterAlive(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("WriterAlive after Close = %v, want closed", err)
	}
}
