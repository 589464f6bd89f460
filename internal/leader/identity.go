package leader

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// identityOf is host_suffix, this instance's identity in audit rows
// and leader election, with each character a LeaseCandidate's name (a
// ConfigMap key) may not hold replaced by "-", and host cut to keep it
// within 253 characters: under --leader-elect-coordinated the API server
// writes the candidate's name as the Lease's holder.
func identityOf(host, suffix string) string {
	host = strings.Map(func(r rune) rune {
		if alphanumeric(r) || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "kubegcd"
	}
	if n := validation.DNS1123SubdomainMaxLength - len(suffix) - 1; len(host) > n {
		host = host[:n]
	}
	return host + "_" + suffix
}

// NewIdentity names this process in audit rows and its Lease:
// hostname_<random>, as leader election identities are (see identityOf).
func NewIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return identityOf(host, hex.EncodeToString(b))
}

// alphanumeric says whether r is an ASCII letter or digit.
func alphanumeric(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}
