package db

import (
	"context"
	"database/sql"
	"strings"
)

// multiRow is an INSERT that writes several rows per statement. Each
// statement costs a bind, a step and a reset however many rows it holds,
// and the Go side of a statement costs as much as SQLite's insert of a
// small row. An object's references, or a page's targets, go in a few
// statements rather than one each.
type multiRow struct {
	// head is the statement up to VALUES, tail what follows the rows.
	head, tail string
	// cols is the number of values of a row.
	cols int
	// qs holds the statement for each of multiRowSizes.
	qs [len(multiRowSizes)]string
}

func newMultiRow(head, tail string, cols int) *multiRow {
	m := &multiRow{head: head, tail: tail, cols: cols}
	for i, n := range multiRowSizes {
		m.qs[i] = m.query(n)
	}
	return m
}

// multiRowSizes are the row counts of the statements prepared for each
// multiRow. A batch is split greedily into statements of these sizes.
var multiRowSizes = [...]int{32, 8, 2, 1}

// query is m's statement for n rows.
func (m multiRow) query(n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", m.cols), ", ") + ")"
	var b strings.Builder
	b.WriteString(m.head)
	b.WriteString(" VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(m.tail)
	return b.String()
}

// queries are m's statements, one per size, for writeQueries.
func (m *multiRow) queries() []string { return m.qs[:] }

// exec writes the rows whose values args holds, m.cols each.
func (m *multiRow) exec(ctx context.Context, d *core, tx *sql.Tx, args []any) error {
	for i, n := range multiRowSizes {
		for len(args) >= n*m.cols {
			st, err := d.txStmt(ctx, tx, m.qs[i])
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, args[:n*m.cols]...); err != nil {
				return err
			}
			args = args[n*m.cols:]
		}
	}
	return nil
}
