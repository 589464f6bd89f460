package http

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// replacement is one way an operator swaps a file for another that has
// the same size and modification time as the one it replaces: what cp -p,
// rsync -a, install -p and tar make, and files written in one tick of the
// file system's clock.
type replacement struct {
	name string
	// install writes the first version of each file (name → content) in
	// dir and returns the path of each, for the daemon to read.
	install func(t *testing.T, dir string, files map[string][]byte) map[string]string
	// replace puts the second version of each file in place of the
	// first, keeping its size and modification time.
	replace func(t *testing.T, dir string, files map[string][]byte)
	// seenWithin is how long the change may go unseen.
	seenWithin time.Duration
}

// sameTime is the modification time of every version: touch -r.
var sameTime = time.Unix(1_700_000_000, 123_456_789)

func writeAt(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, sameTime, sameTime); err != nil {
		t.Fatal(err)
	}
}

// swapSymlink points link at target atomically, as ln -sfn through a
// rename does (and as Kubernetes updates a Secret's volume: ..data).
func swapSymlink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// installFiles writes each file in dir.
func installFiles(t *testing.T, dir string, files map[string][]byte) map[string]string {
	paths := map[string]string{}
	for name, data := range files {
		paths[name] = filepath.Join(dir, name)
		writeAt(t, paths[name], data)
	}
	return paths
}

var replacements = []replacement{
	{
		name:       "renamed over, same size and mtime",
		seenWithin: recheckEvery,
		install:    installFiles,
		replace: func(t *testing.T, dir string, files map[string][]byte) {
			for name, data := range files {
				path := filepath.Join(dir, name)
				writeAt(t, path+".new", data)
				if err := os.Rename(path+".new", path); err != nil {
					t.Fatal(err)
				}
			}
		},
	},
	{
		name:       "symlink swapped, same size and mtime",
		seenWithin: recheckEvery,
		install: func(t *testing.T, dir string, files map[string][]byte) map[string]string {
			paths := map[string]string{}
			for name, data := range files {
				writeAt(t, filepath.Join(dir, "v1", name), data)
				paths[name] = filepath.Join(dir, name)
				if err := os.Symlink(filepath.Join("..data", name), paths[name]); err != nil {
					t.Fatal(err)
				}
			}
			swapSymlink(t, "v1", filepath.Join(dir, "..data"))
			return paths
		},
		replace: func(t *testing.T, dir string, files map[string][]byte) {
			for name, data := range files {
				writeAt(t, filepath.Join(dir, "v2", name), data)
			}
			swapSymlink(t, "v2", filepath.Join(dir, "..data"))
		},
	},
	{
		// The change time tells, unless the rewrite falls in the clock
		// tick of the last read: the content's hash tells then.
		name:       "rewritten in place, same size and mtime",
		seenWithin: rereadEvery,
		install:    installFiles,
		replace: func(t *testing.T, dir string, files map[string][]byte) {
			for name, data := range files {
				writeAt(t, filepath.Join(dir, name), data)
			}
		},
	},
}

// TestTokensReplacedKeepingTimes: a token file replaced by another of the
// same size and modification time is read again at the next look, a
// second later: the revoked token is refused, the new one accepted.
func TestTokensReplacedKeepingTimes(t *testing.T) {
	const old, replaced = "TOKENA1234567890,alice\n", "TOKENC1234567890,carol\n"
	for _, rp := range replacements {
		t.Run(rp.name, func(t *testing.T) {
			dir := t.TempDir()
			path := rp.install(t, dir, map[string][]byte{"tokens": []byte(old)})["tokens"]
			tok, err := LoadTokens(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Unix(5000, 0)
			tok.now = func() time.Time { return clock }
			if name, ok := tok.Check("TOKENA1234567890"); !ok || name != "alice" {
				t.Fatalf("before: Check(TOKENA…) = %q, %v", name, ok)
			}
			rp.replace(t, dir, map[string][]byte{"tokens": []byte(replaced)})
			clock = clock.Add(rp.seenWithin)
			if name, ok := tok.Check("TOKENA1234567890"); ok {
				t.Errorf("the revoked token is still accepted (as %q)", name)
			}
			if name, ok := tok.Check("TOKENC1234567890"); !ok || name != "carol" {
				t.Errorf("the new token: Check = %q, %v; want carol", name, ok)
			}
		})
	}
}

// testPair is a self-signed certificate and its key, in PEM.
type testPair struct {
	cert, key []byte
}

func newTestPair(t *testing.T, cn string) testPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{cn}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testPair{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
}

// sameSize pads the shorter of a and b with trailing newlines, which PEM
// ignores, so that the two files have one size.
func sameSize(a, b []byte) ([]byte, []byte) {
	for len(a) < len(b) {
		a = append(a, '\n')
	}
	for len(b) < len(a) {
		b = append(b, '\n')
	}
	return a, b
}

// TestTLSPairReplacedKeepingTimes: a certificate and key replaced by a
// pair of the same sizes and modification times are served from the next
// look on.
func TestTLSPairReplacedKeepingTimes(t *testing.T) {
	for _, rp := range replacements {
		t.Run(rp.name, func(t *testing.T) {
			first, second := newTestPair(t, "first.example"), newTestPair(t, "second.example")
			first.cert, second.cert = sameSize(first.cert, second.cert)
			first.key, second.key = sameSize(first.key, second.key)
			dir := t.TempDir()
			paths := rp.install(t, dir, map[string][]byte{"tls.crt": first.cert, "tls.key": first.key})
			clock := time.Unix(5000, 0)
			f := &TLSFiles{CertFile: paths["tls.crt"], KeyFile: paths["tls.key"], Logf: t.Logf,
				now: func() time.Time { return clock }}
			if _, err := f.Config(); err != nil {
				t.Fatal(err)
			}
			if cn := servedName(t, f); cn != "first.example" {
				t.Fatalf("before: serves %q", cn)
			}
			rp.replace(t, dir, map[string][]byte{"tls.crt": second.cert, "tls.key": second.key})
			clock = clock.Add(rp.seenWithin)
			if cn := servedName(t, f); cn != "second.example" {
				t.Errorf("after the replacement: serves %q, want second.example", cn)
			}
		})
	}
}

// servedName is the common name of the certificate f serves.
func servedName(t *testing.T, f *TLSFiles) string {
	t.Helper()
	c, err := f.getCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

// TestWatchedFile: a file touched but not changed is not taken again; a
// rewrite that stat cannot tell (within one tick of the file system's
// clock) is read within rereadEvery.
func TestWatchedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	writeAt(t, path, []byte("one"))
	f := watchedFile{path: path}
	start := time.Unix(5000, 0)
	if data, changed, err := f.read(start); err != nil || !changed || string(data) != "one" {
		t.Fatalf("first read: %q, %v, %v", data, changed, err)
	}
	if f.stale(start.Add(recheckEvery)) {
		t.Error("an unchanged file is stale before rereadEvery")
	}

	if err := os.Chtimes(path, time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	now := start.Add(recheckEvery)
	if !f.stale(now) {
		t.Error("a touched file is not stale")
	}
	if _, changed, err := f.read(now); err != nil || changed {
		t.Errorf("a touched file: changed %v, %v; want the same content", changed, err)
	}

	// A rewrite in the tick of the last read: stat shows what that read saw.
	writeAt(t, path, []byte("two"))
	stamp, err := stampOf(path)
	if err != nil {
		t.Fatal(err)
	}
	f.stamp = stamp
	now = now.Add(rereadEvery)
	if !f.stale(now) {
		t.Fatalf("not stale %s after the last read", rereadEvery)
	}
	if data, changed, err := f.read(now); err != nil || !changed || string(data) != "two" {
		t.Errorf("read after the rewrite: %q, %v, %v; want two, changed", data, changed, err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !f.stale(now) {
		t.Error("a removed file is not stale")
	}
	if _, _, err := f.read(now); err == nil {
		t.Error("a removed file reads")
	}
	writeAt(t, path, []byte("two"))
	if _, changed, err := f.read(now); err != nil || !changed {
		t.Errorf("back after a failed read: changed %v, %v; want changed", changed, err)
	}
}

// TestTLSPairHalfWritten: a certificate renewed before its key is not
// served with the old key: the pair loaded before stays until the key
// follows, and is then replaced at the next look.
func TestTLSPairHalfWritten(t *testing.T) {
	first, second := newTestPair(t, "first.example"), newTestPair(t, "second.example")
	dir := t.TempDir()
	paths := installFiles(t, dir, map[string][]byte{"tls.crt": first.cert, "tls.key": first.key})
	clock := time.Unix(5000, 0)
	var logged []string
	f := &TLSFiles{CertFile: paths["tls.crt"], KeyFile: paths["tls.key"], now: func() time.Time { return clock },
		Logf: func(msg string, _ ...any) { logged = append(logged, msg) }}
	if _, err := f.Config(); err != nil {
		t.Fatal(err)
	}
	writeAt(t, paths["tls.crt"]+".new", second.cert)
	if err := os.Rename(paths["tls.crt"]+".new", paths["tls.crt"]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		clock = clock.Add(rereadEvery)
		if cn := servedName(t, f); cn != "first.example" {
			t.Fatalf("with the new certificate and the old key: serves %q, want the pair loaded before", cn)
		}
	}
	if len(logged) != 1 {
		t.Errorf("logged %q, want one line for the one pair that is not valid", logged)
	}
	writeAt(t, paths["tls.key"]+".new", second.key)
	if err := os.Rename(paths["tls.key"]+".new", paths["tls.key"]); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(recheckEvery)
	if cn := servedName(t, f); cn != "second.example" {
		t.Errorf("with the new key too: serves %q, want second.example", cn)
	}
}
