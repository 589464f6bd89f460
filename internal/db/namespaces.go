package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// NamespaceStatus holds what tells why a Namespace's deletion does not
// finish. The namespace controller removes the finalizers of its spec once
// the namespace is empty, and reports the conditions.
type NamespaceStatus struct {
	Phase          string
	SpecFinalizers []string
	Conditions     []Condition
}

// Condition is a status condition as the API shows it.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// MarshalJSON writes c as the namespaces table keeps it: with the API's
// field names, and without empty fields.
func (c Condition) MarshalJSON() ([]byte, error) {
	return marshalFields("type", c.Type, "status", c.Status, "reason", c.Reason, "message", c.Message)
}

// UnmarshalJSON reads c as the namespaces table keeps it.
func (c *Condition) UnmarshalJSON(b []byte) error {
	f, err := unmarshalFields(b)
	*c = Condition{Type: f["type"], Status: f["status"], Reason: f["reason"], Message: f["message"]}
	return err
}

func (d *core) namespaceColumns(ctx context.Context, o *Object) error {
	var phase, fins, conds sql.NullString
	err := d.queryRow(ctx, `SELECT phase, spec_finalizers, conditions FROM namespaces WHERE uid = ?`,
		o.UID).Scan(&phase, &fins, &conds)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", o.UID, err)
	}
	ns, err := namespaceStatus(phase, fins, conds)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", o.UID, err)
	}
	o.NamespaceStatus = ns
	return nil
}

// namespaceStatus reads the columns of a namespaces row. It returns nil
// when there is none, which a LEFT JOIN gives as a NULL phase.
func namespaceStatus(phase, fins, conds sql.NullString) (*NamespaceStatus, error) {
	if !phase.Valid {
		return nil, nil
	}
	ns := &NamespaceStatus{Phase: phase.String}
	if fins.Valid {
		if err := json.Unmarshal([]byte(fins.String), &ns.SpecFinalizers); err != nil {
			return nil, fmt.Errorf("spec finalizers: %w", err)
		}
	}
	if conds.Valid {
		if err := json.Unmarshal([]byte(conds.String), &ns.Conditions); err != nil {
			return nil, fmt.Errorf("conditions: %w", err)
		}
	}
	return ns, nil
}
