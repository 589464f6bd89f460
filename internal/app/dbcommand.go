package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/cmdline"
	"github.com/kubegcd/kubegcd/internal/db"
)

const dbHelp = `  check        run PRAGMA integrity_check on the database: "ok" (exit 0),
               or what is damaged (exit 3, as kubegcd run exits on it)
  backup DEST  copy the database to DEST, a new file, as one consistent
               snapshot (VACUUM INTO), mode 0600, then check the copy

Both work while kubegcd runs on the database: they read a snapshot and
take no lock.`

// dbCommand is kubegcd db check|backup.
func dbCommand() *cobra.Command {
	var dbPath string
	cmd := &cobra.Command{
		Use:                   "db check|backup [--db PATH] [DEST]",
		Short:                 "check the database, or copy it while kubegcd runs",
		Long:                  dbHelp,
		DisableFlagsInUseLine: true,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion,
			cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []cobra.Completion{"check", "backup"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault // backup's DEST: a file
		},
		Args: func(_ *cobra.Command, args []string) error {
			if (len(args) == 1 && args[0] == "check") || (len(args) == 2 && args[0] == "backup") {
				return nil
			}
			return cmdline.Usagef("db needs check, or backup DEST")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "check" {
				if err := db.Check(cmd.Context(), dbPath); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "ok")
				return nil
			}
			if err := db.Backup(cmd.Context(), dbPath, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up to %s\n", args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", "kubegcd.db", "path of the SQLite database")
	return cmd
}
