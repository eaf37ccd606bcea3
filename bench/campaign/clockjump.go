package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mightyetl/leasefence/internal/pglocal"
)

// libfaketimePaths are where Debian's libfaketime package puts the
// preload library.
var libfaketimePaths = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
}

// FaketimeHint says how to install libfaketime.
const FaketimeHint = "install libfaketime: apt-get install faketime (it is in the Makefile's DEB_PACKAGES; run make deps)"

// findLibfaketime returns the path of libfaketime.so.1.
func findLibfaketime() (string, error) {
	for _, p := range libfaketimePaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("campaign: libfaketime not found (%v): %s", libfaketimePaths, FaketimeHint)
}

// dbClock is the database server's clock offset, applied by libfaketime:
// the server runs from a bin folder whose postgres is a script that
// preloads libfaketime with the offset read from a file, so writing the
// file moves clock_timestamp() for every backend at once. (No cache: a
// cached offset lets backends disagree for up to a second, which no real
// clock step does, and the checker rightly reports the false expiries
// that follow.) The monotonic clocks stay real, so PostgreSQL's own
// timeouts are not disturbed.
type dbClock struct {
	dir    string // the wrapper bin folder, readable by the server's account
	file   string // the offset file
	offset time.Duration
}

// newDBClock makes the wrapper bin folder for the binaries in realBin.
func newDBClock() (*dbClock, string, error) {
	lib, err := findLibfaketime()
	if err != nil {
		return nil, "", err
	}
	realBin, err := pglocal.FindBinDir()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("/tmp", "campaign-pgbin-")
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, "", err
	}
	c := &dbClock{dir: dir, file: filepath.Join(dir, "faketime-offset")}
	if err := c.set(0); err != nil {
		return nil, "", err
	}
	entries, err := os.ReadDir(realBin)
	if err != nil {
		return nil, "", err
	}
	for _, e := range entries {
		if e.Name() == "postgres" {
			continue
		}
		if err := os.Symlink(filepath.Join(realBin, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return nil, "", err
		}
	}
	script := "#!/bin/sh\n" +
		"LD_PRELOAD=" + strconv.Quote(lib) + " FAKETIME_TIMESTAMP_FILE=" + strconv.Quote(c.file) +
		" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 exec " +
		strconv.Quote(filepath.Join(realBin, "postgres")) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "postgres"), []byte(script), 0o755); err != nil {
		return nil, "", err
	}
	return c, dir, nil
}

// set writes the offset file (read by every backend within a second).
func (c *dbClock) set(offset time.Duration) error {
	c.offset = offset
	tmp := c.file + ".new"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%+ds\n", int64(offset/time.Second))), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

// remove deletes the wrapper folder.
func (c *dbClock) remove() { _ = os.RemoveAll(c.dir) }
