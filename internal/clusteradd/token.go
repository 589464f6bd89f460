package clusteradd

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// minTokenDuration is the shortest token the TokenRequest API issues.
const minTokenDuration = 10 * time.Minute

// token is the ServiceAccount's bearer token and what to say of it.
type token struct {
	value string
	// expires is zero for a Secret's token, which lasts as long as the
	// Secret does.
	expires time.Time
	// from says where the token came from, for the line that reports it.
	from string
}

// requestToken asks the TokenRequest API for a token of sa valid for d.
// The API server may shorten it (--service-account-max-token-expiration).
func requestToken(ctx context.Context, cs kubernetes.Interface, sa *corev1.ServiceAccount, d time.Duration) (token, error) {
	secs := int64(d / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return token{}, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return token{value: tr.Status.Token, expires: tr.Status.ExpirationTimestamp.Time,
		from: fmt.Sprintf("TokenRequest for ServiceAccount %s/%s", sa.Namespace, sa.Name)}, nil
}

// secretToken waits up to timeout for kube-controller-manager's token
// controller to write the token into the Secret s, polling every interval.
func secretToken(ctx context.Context, cs kubernetes.Interface, s *corev1.Secret, interval, timeout time.Duration) (token, error) {
	var value string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		value = string(got.Data[corev1.ServiceAccountTokenKey])
		return value != "", nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return token{}, fmt.Errorf("the Secret %s/%s has no token after %v: kube-controller-manager's token controller fills it; "+
			"without one, ask for a TokenRequest token with --token-duration", s.Namespace, s.Name, timeout)
	}
	if err != nil {
		return token{}, fmt.Errorf("reading Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return token{value: value, from: fmt.Sprintf("Secret %s/%s (%s)", s.Namespace, s.Name, s.Type)}, nil
}

// describeToken is the line that says where the token came from and when it
// expires, now being now.
func describeToken(t token, asked time.Duration, now time.Time) string {
	if t.expires.IsZero() {
		return fmt.Sprintf("token: from %s; it does not expire: kubegcd cluster remove revokes it", t.from)
	}
	left := t.expires.Sub(now).Round(time.Second)
	s := fmt.Sprintf("token: from a %s; it expires at %s (in %v)", t.from, t.expires.UTC().Format(time.RFC3339), left)
	if left < asked-time.Minute {
		s += fmt.Sprintf(", sooner than the %v asked: the API server caps tokens' lifetime", asked)
	}
	return s + "; run cluster add again before then"
}
