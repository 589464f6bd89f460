package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kubegcd/kubegcd/internal/db"
)

const dbUsage = `Usage: kubegcd db check|backup [--db PATH] [DEST]

  check        run PRAGMA integrity_check on the database: "ok" (exit 0),
               or what is damaged (exit 3, as kubegcd run exits on it)
  backup DEST  copy the database to DEST, a new file, as one consistent
               snapshot (VACUUM INTO), mode 0600, then check the copy

Both work while kubegcd runs on the database: they read a snapshot and
take no lock.

Flags:
`

// dbCommand runs kubegcd db check|backup.
func dbCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kubegcd db", flag.ContinueOnError)
	dbPath := fs.String("db", "kubegcd.db", "path of the SQLite database")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), dbUsage)
		fs.PrintDefaults()
	}
	var command string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "kubegcd: %v (see 'kubegcd help db')\n", err)
		return exitUsage
	}
	rest := fs.Args()
	if command == "" && len(rest) > 0 {
		command, rest = rest[0], rest[1:]
	}
	var err error
	switch {
	case command == "check" && len(rest) == 0:
		if err = db.Check(ctx, *dbPath); err == nil {
			fmt.Fprintln(stdout, "ok")
		}
	case command == "backup" && len(rest) == 1:
		if err = db.Backup(ctx, *dbPath, rest[0]); err == nil {
			fmt.Fprintf(stdout, "backed up to %s\n", rest[0])
		}
	default:
		fmt.Fprintln(stderr, "kubegcd: db needs check, or backup DEST (see 'kubegcd help db')")
		return exitUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "kubegcd:", err)
		if errors.Is(err, db.ErrCorrupt) {
			return exitCorrupt
		}
		return exitError
	}
	return exitOK
}
