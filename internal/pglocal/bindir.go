package pglocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned when no folder with the PostgreSQL server
// binaries (initdb and postgres) can be found on this machine.
var ErrNoBinaries = errors.New("pglocal: no PostgreSQL server binaries (initdb, postgres) found " +
	"via pg_config --bindir, PATH or /usr/lib/postgresql/*/bin; " +
	"run make deps (apt-get install postgresql-15)")

// debianRoot is where Debian and Ubuntu install one folder per server
// version. It is a variable so tests can point it elsewhere.
var debianRoot = "/usr/lib/postgresql"

// FindBinDir returns the folder holding the PostgreSQL server binaries,
// looking in this order: the folder `pg_config --bindir` prints, the folder
// of an initdb found on PATH (after following symbolic links, so the
// postgres next to it is the matching one), and the newest
// /usr/lib/postgresql/<version>/bin. A folder only counts when it holds
// both initdb and postgres. It returns ErrNoBinaries when none does.
func FindBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			if dir := filepath.Dir(real); hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	if dir := newestDebianBinDir(debianRoot); dir != "" {
		return dir, nil
	}
	return "", ErrNoBinaries
}

// hasServerBinaries reports whether dir holds executable initdb and
// postgres files.
func hasServerBinaries(dir string) bool {
	if dir == "" {
		return false
	}
	for _, name := range []string{"initdb", "postgres"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// newestDebianBinDir returns root/<version>/bin for the highest numeric
// version that holds the server binaries, or "" when there is none.
func newestDebianBinDir(root string) string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return ""
	}
	type candidate struct {
		version float64
		dir     string
	}
	var found []candidate
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64)
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "bin")
		if hasServerBinaries(dir) {
			found = append(found, candidate{v, dir})
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Slice(found, func(i, j int) bool { return found[i].version > found[j].version })
	return found[0].dir
}

// checkBinDir returns an error that names the folder when dir does not hold
// the server binaries.
func checkBinDir(dir string) error {
	if !hasServerBinaries(dir) {
		return fmt.Errorf("pglocal: %s does not hold the PostgreSQL server binaries initdb and postgres", dir)
	}
	return nil
}
