package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// readmeStep returns the text of the README's getting-started step that
// starts with "**N. ", up to the next step (or the end of the section).
func readmeStep(t *testing.T, readme string, n string) string {
	t.Helper()
	section := readme[strings.Index(readme, "## Getting started"):]
	section = section[:strings.Index(section[1:], "\n## ")+1]
	start := strings.Index(section, "**"+n+". ")
	require.NotEqual(t, -1, start, "README step %s", n)
	step := section[start:]
	if next := regexp.MustCompile(`\n\*\*\d\. `).FindStringIndex(step[1:]); next != nil {
		step = step[:next[0]+1]
	}
	return step
}

// fenced returns the code blocks of kind lang ("sh", "sql", "go") in text.
func fenced(text, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// shellWords splits one README shell command into its words the way sh
// does for the commands the README uses: backslash-newline continues the
// line, double quotes group, and $NAME inside them is replaced from vars.
func shellWords(t *testing.T, command string, vars map[string]string) []string {
	t.Helper()
	command = strings.ReplaceAll(command, "\\\n", " ")
	var words []string
	for _, m := range regexp.MustCompile(`"([^"]*)"|(\S+)`).FindAllStringSubmatch(strings.TrimSpace(command), -1) {
		word := m[2]
		if m[2] == "" {
			word = os.Expand(m[1], func(name string) string {
				value, ok := vars[name]
				require.True(t, ok, "the README uses $%s", name)
				return value
			})
		}
		words = append(words, word)
	}
	return words
}

// runReadmeLeasectl runs one README "go run .../cmd/leasectl@latest ..."
// command with this test's leasectl binary.
func runReadmeLeasectl(t *testing.T, command string, vars map[string]string) result {
	t.Helper()
	const goRun = "go run github.com/mightyetl/leasefence/cmd/leasectl@latest "
	require.True(t, strings.HasPrefix(command, goRun), "a README leasectl command: %s", command)
	return leasectl(t, shellWords(t, strings.TrimPrefix(command, goRun), vars)...)
}

// Issue 37, item 3: after the README's getting-started steps exactly,
// leasectl audit exited 2 with six findings (the new logins had neither a
// statement nor an idle-in-transaction timeout, which only the runbook
// mentioned); step 2 said a database owner with CREATEROLE could install,
// which leasectl refuses; the example's upsert would have hidden a double
// write. This test follows steps 2 to 5 as written on a new cluster (step 1
// is go get, which this module needs no more): the bundle applied as the
// superuser, the SQL of step 3, the policy of step 4 as the operator, the
// worker of step 5 built from the README's own code and run until the job
// the README enqueues is loaded; then the README's audit exits 0. Applied
// by a database owner with CREATEROLE, the bundle is refused with the words
// the README quotes.
func TestReadmeGettingStartedEndsWithACleanAudit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(raw)

	cluster, err := pglocal.Start(ctx, pglocal.Options{Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err, testdb.InstallHint)
	t.Cleanup(func() { _ = cluster.Stop() })
	admin, err := pgx.Connect(ctx, cluster.URL("postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `CREATE DATABASE app`)
	require.NoError(t, err)
	login := func(user, database string) string {
		u, err := url.Parse(cluster.URL(database))
		require.NoError(t, err)
		u.User = url.UserPassword(user, "change-me")
		return u.String()
	}
	vars := map[string]string{
		"ADMIN_DATABASE_URL":    cluster.URL("app"),
		"OPERATOR_DATABASE_URL": login("etl_operator", "app"),
	}

	// Step 2, as a database owner with CREATEROLE first: refused, with the
	// README's words, and nothing installed.
	step2 := readmeStep(t, readme, "2")
	require.Contains(t, step2, "as a superuser")
	m := regexp.MustCompile(`\("([^"]+)"\)`).FindStringSubmatch(step2)
	require.NotNil(t, m, "step 2 quotes leasectl's refusal")
	_, err = admin.Exec(ctx, `CREATE ROLE app_owner LOGIN CREATEROLE PASSWORD 'change-me'`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `CREATE DATABASE owned OWNER app_owner`)
	require.NoError(t, err)
	commands := fenced(step2, "sh")
	require.Len(t, commands, 1)
	refused := runReadmeLeasectl(t, commands[0], map[string]string{"ADMIN_DATABASE_URL": login("app_owner", "owned")})
	requireCode(t, exitError, refused)
	require.Contains(t, refused.stderr, m[1])
	r := runReadmeLeasectl(t, commands[0], vars)
	requireCode(t, exitOK, r)

	// Step 3, the SQL as written, as the superuser.
	step3 := fenced(readmeStep(t, readme, "3"), "sql")
	require.Len(t, step3, 1)
	require.Contains(t, step3[0], "UNIQUE", "the target table has a unique key")
	app, err := pgx.Connect(ctx, cluster.URL("app"))
	require.NoError(t, err)
	defer app.Close(ctx)
	_, err = app.Exec(ctx, step3[0])
	require.NoError(t, err)

	// Step 4, as the operator.
	step4 := fenced(readmeStep(t, readme, "4"), "sh")
	require.Len(t, step4, 1)
	r = runReadmeLeasectl(t, step4[0], vars)
	requireCode(t, exitOK, r)

	// Step 5: the README's worker, built as written, run as etl_worker.
	step5 := readmeStep(t, readme, "5")
	worker := fenced(step5, "go")
	require.Len(t, worker, 1)
	require.NotContains(t, worker[0], "ON CONFLICT", "a plain INSERT: a double write shows")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(worker[0]), 0o600))
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "worker"), filepath.Join(dir, "main.go"))
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the README's worker: %s", out)
	run := exec.CommandContext(ctx, filepath.Join(dir, "worker"))
	run.Env = append(cleanEnv(), "LEASEFENCE_DATABASE_URL="+login("etl_worker", "app"))
	var logs syncBuffer
	run.Stdout, run.Stderr = &logs, &logs
	require.NoError(t, run.Start())
	t.Cleanup(func() { _ = run.Process.Kill() })

	// The producer enqueues with the README's SQL, as etl_producer.
	enqueue := regexp.MustCompile("`(SELECT durable_jobs.enqueue_job\\('etl.orders', [^`]+\\))`").FindStringSubmatch(step5)
	require.NotNil(t, enqueue, "step 5 shows the producer's SQL")
	producer, err := pgx.Connect(ctx, login("etl_producer", "app"))
	require.NoError(t, err)
	var id int64
	require.NoError(t, producer.QueryRow(ctx, enqueue[1]).Scan(&id))
	require.NoError(t, producer.Close(ctx))
	require.Eventually(t, func() bool {
		var status string
		err := app.QueryRow(ctx, `SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = $1`, id).Scan(&status)
		return err == nil && status == "SUCCEEDED"
	}, time.Minute, 50*time.Millisecond, "the README's worker completes the job; its log:\n%s", &logs)
	var loaded int64
	require.NoError(t, app.QueryRow(ctx, `SELECT job_record_id FROM public.etl_order_totals WHERE order_id = 7`).Scan(&loaded))
	require.Equal(t, id, loaded)
	require.NoError(t, run.Process.Signal(syscall.SIGINT))
	require.NoError(t, run.Wait(), "the worker stops cleanly on Ctrl-C; its log:\n%s", &logs)

	// The README's audit, once the logins' sessions have ended.
	require.Eventually(t, func() bool {
		var sessions int
		err := app.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE usename LIKE 'etl\_%'`).Scan(&sessions)
		return err == nil && sessions == 0
	}, 30*time.Second, 50*time.Millisecond)
	audit := fenced(readme[strings.Index(readme, "Then check the database against leasefence's contract"):], "sh")
	require.NotEmpty(t, audit)
	r = runReadmeLeasectl(t, audit[0], vars)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "audit passed")
}

// syncBuffer is a bytes.Buffer safe for a process's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
