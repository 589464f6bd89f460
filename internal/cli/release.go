// Package cli holds kubegcd's client subcommands: HTTP clients of a running
// kubegcd's API, which never open the database or the cluster themselves.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Release asks the kubegcd serving at server to release enforcement held
// by the blast-radius cap (--blast-radius-resume=manual), giving reason for
// the audit history. An error carries the server's own message.
func Release(ctx context.Context, client *http.Client, server, reason string) error {
	body, err := json.Marshal(map[string]string{"reason": reason})
	if err != nil {
		return err
	}
	url := strings.TrimRight(server, "/") + "/enforcement/release"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("--server %s: %w", server, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Error string `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return fmt.Errorf("%s: %s", resp.Status, e.Error)
}
