package pglocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// initdbCached fills the data directory from the cache when it holds a
// copy made with the same binaries and options, else runs initdb and
// stores a copy. A cache that cannot be used only costs the initdb run.
func (c *Cluster) initdbCached(ctx context.Context, noSync bool, cacheDir string) error {
	if cacheDir == "" {
		return c.initdb(ctx, noSync)
	}
	key, err := c.cacheKey(noSync)
	if err != nil {
		c.logf("pglocal: initdb cache not used: %v", err)
		return c.initdb(ctx, noSync)
	}
	cached := filepath.Join(cacheDir, key)
	if _, err := os.Stat(filepath.Join(cached, "PG_VERSION")); err == nil {
		began := time.Now()
		if err := copyTree(ctx, cached, c.dataDir); err == nil {
			if err := c.account.chownTree(c.dataDir); err != nil {
				return err
			}
			c.logf("pglocal: data directory copied from the initdb cache in %s", time.Since(began).Round(time.Millisecond))
			return nil
		}
		// A broken copy: start over with a real initdb.
		if err := os.RemoveAll(c.dataDir); err != nil {
			return fmt.Errorf("pglocal: clear data directory: %w", err)
		}
	}
	if err := c.initdb(ctx, noSync); err != nil {
		return err
	}
	c.storeInCache(ctx, cacheDir, cached)
	return nil
}

// cacheKey names a cache entry after everything that shapes initdb's
// output: the postgres binary (path, size, time) and its version, the
// superuser and the options.
func (c *Cluster) cacheKey(noSync bool) (string, error) {
	postgres := filepath.Join(c.binDir, "postgres")
	info, err := os.Stat(postgres)
	if err != nil {
		return "", err
	}
	version, err := exec.Command(postgres, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("postgres --version: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%d\n%s\n%s\n%v\nUTF8 C trust\n", postgres, info.Size(), info.ModTime().UnixNano(),
		version, c.superuser, noSync)
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// storeInCache copies the fresh data directory into the cache, through a
// temporary folder and a rename so that a reader never sees half a copy
// and two writers at once are harmless.
func (c *Cluster) storeInCache(ctx context.Context, cacheDir, cached string) {
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		c.logf("pglocal: initdb cache not written: %v", err)
		return
	}
	tmp, err := os.MkdirTemp(cacheDir, ".incoming-")
	if err != nil {
		c.logf("pglocal: initdb cache not written: %v", err)
		return
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "data")
	if err := copyTree(ctx, c.dataDir, staged); err != nil {
		c.logf("pglocal: initdb cache not written: %v", err)
		return
	}
	if err := os.Rename(staged, cached); err == nil {
		c.logf("pglocal: initdb output stored in the cache")
	}
}

// copyTree copies folder src to dst (which must not exist) with modes,
// owners and times kept.
func copyTree(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a %s %s: %v: %s", src, dst, err, out)
	}
	return nil
}
