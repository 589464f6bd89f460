package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/kubegcd/kubegcd/migrations"
)

// LatestVersion is the newest schema version this binary carries.
func LatestVersion() uint {
	entries, _ := fs.ReadDir(migrations.FS, ".")
	var latest uint
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(n, 10, 32); err == nil && uint(v) > latest {
			latest = uint(v)
		}
	}
	return latest
}

func newMigrate(path string) (*migrate.Migrate, error) {
	if dir := filepath.Dir(path); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("database %s: directory %s does not exist", path, dir)
		}
	}
	conn, err := openPool(path, false)
	if err != nil {
		return nil, err
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		conn.Close()
		return nil, err
	}
	drv, err := migratesqlite.WithInstance(conn, &migratesqlite.Config{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return m, nil
}

// checkVersion refuses a dirty database or one migrated by a newer kubegcd.
func checkVersion(m *migrate.Migrate, path string) error {
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("database %s: reading schema version: %w", path, err)
	}
	if dirty {
		return fmt.Errorf("database %s: schema version %d is dirty (a migration failed half-way); "+
			"restore a backup or fix it with `kubegcd migrate`", path, v)
	}
	if latest := LatestVersion(); v > latest {
		return fmt.Errorf("database %s: schema version %d is newer than this kubegcd supports (%d); "+
			"use a newer kubegcd", path, v, latest)
	}
	return nil
}

func migrateUp(ctx context.Context, path string) error {
	m, err := newMigrate(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := checkVersion(m, path); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("database %s: migrating: %w", path, err)
	}
	return ctx.Err()
}

// Migrate runs `kubegcd migrate` on the database at path: "up", "down" (one
// step) or "version". It takes the same lock as the daemon. It returns the
// schema version after the command.
func Migrate(ctx context.Context, path, command string) (version uint, dirty bool, err error) {
	if path, err = resolve(path); err != nil {
		return 0, false, err
	}
	lock, err := lockFile(path, &made{})
	if err != nil {
		return 0, false, err
	}
	defer lock.Close()
	if err := checkFile(ctx, path); err != nil {
		return 0, false, err
	}
	m, err := newMigrate(path)
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	switch command {
	case "up":
		if err := checkVersion(m, path); err != nil {
			return 0, false, err
		}
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return 0, false, fmt.Errorf("database %s: migrating up: %w", path, err)
		}
	case "down":
		if err := checkVersion(m, path); err != nil {
			return 0, false, err
		}
		if err := m.Steps(-1); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, false, fmt.Errorf("database %s: migrating down: %w", path, err)
		}
	case "version":
	default:
		return 0, false, fmt.Errorf("unknown migrate command %q: want up, down or version", command)
	}
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return version, dirty, err
}
