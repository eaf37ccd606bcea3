package pglocal

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverAccount is the operating-system account that runs initdb and
// postgres. A nil *serverAccount means "the calling account".
type serverAccount struct {
	name     string
	uid, gid uint32
}

// dedicatedAccount is the system account Start creates when the caller is
// root and neither Options.OSUser nor "nobody" exists.
const dedicatedAccount = "pglocal"

// chooseAccount returns the account the server must run as: nil when the
// caller is not root (the server runs as the caller), else the named or
// default unprivileged account.
func chooseAccount(requested string, logf func(string, ...any)) (*serverAccount, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if requested != "" {
		return lookupAccount(requested)
	}
	if acct, err := lookupAccount("nobody"); err == nil {
		return acct, nil
	}
	if acct, err := lookupAccount(dedicatedAccount); err == nil {
		return acct, nil
	}
	logf("pglocal: creating system account %q to run PostgreSQL (it refuses to run as root)", dedicatedAccount)
	out, err := exec.Command("useradd", "--system", "--no-create-home",
		"--shell", "/usr/sbin/nologin", dedicatedAccount).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("pglocal: running as root and no unprivileged account to run PostgreSQL: useradd %s: %v: %s",
			dedicatedAccount, err, out)
	}
	return lookupAccount(dedicatedAccount)
}

// lookupAccount resolves an account name to its uid and primary gid.
func lookupAccount(name string) (*serverAccount, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pglocal: look up OS account %q: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: OS account %q has a non-numeric uid %q", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: OS account %q has a non-numeric gid %q", name, u.Gid)
	}
	if uid == 0 {
		return nil, fmt.Errorf("pglocal: OS account %q is root; PostgreSQL refuses to run as root", name)
	}
	return &serverAccount{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// sysProcAttr returns the process attributes for a server process: its own
// process group (a Ctrl-C in the terminal reaches the caller, which then
// shuts the server down in order) and, for a non-nil account, that
// account's uid and gid with no supplementary groups.
func (a *serverAccount) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
	}
	return attr
}

// chown hands path over to the account (nothing to do for the caller's own
// account).
func (a *serverAccount) chown(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("pglocal: hand %s over to OS account %q: %w", path, a.name, err)
	}
	return nil
}

// traversableByOthers reports whether every folder from dir up to the root
// lets other accounts pass through it (the execute bit for "others"), so an
// unprivileged server account can reach a folder created inside dir.
func traversableByOthers(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		info, err := os.Stat(dir)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// chownTree hands path and everything under it over to the account.
func (a *serverAccount) chownTree(path string) error {
	if a == nil {
		return nil
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return a.chown(p)
	})
}
