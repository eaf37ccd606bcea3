package testdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// EnvDocker names the environment variable that, set to 1, makes the tests
// run PostgreSQL in a Docker container (through github.com/ory/dockertest)
// instead of from the machine's PostgreSQL binaries: for a machine that has
// a Docker engine but no PostgreSQL 15. The engine is found the way the
// docker command finds it (DOCKER_HOST, else the local socket). It is
// ignored when EnvDatabaseURL is set. OwnCluster still needs local
// binaries, and the pgTAP suite still needs pg_prove and psql locally.
const EnvDocker = "LEASEFENCE_TEST_DOCKER"

// DockerImage is the image testdb builds and runs for EnvDocker: the
// official postgres:15 image with pgTAP and plpgsql_check added.
const DockerImage = "leasefence-testdb-postgres"

// dockerfile builds DockerImage.
const dockerfile = `FROM postgres:15-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15-pgtap postgresql-15-plpgsql-check \
 && rm -rf /var/lib/apt/lists/*
`

// dockerSelected reports whether EnvDocker asks for a Docker container.
func dockerSelected() bool { return os.Getenv(EnvDocker) == "1" }

// errNoDockerEngine is the advice when EnvDocker is set but no engine
// answers.
func errNoDockerEngine(cause error) error {
	return fmt.Errorf("%s=1 asks for PostgreSQL in a Docker container, but no Docker engine answers (%v). "+
		"Start a Docker engine (or point DOCKER_HOST at one), or unset %s to use the local PostgreSQL 15 "+
		"binaries (the default; %s), or set %s to a superuser URL of an existing server",
		EnvDocker, cause, EnvDocker, InstallHint, EnvDatabaseURL)
}

// startDocker builds DockerImage when needed, runs it with the same
// settings as a local cluster, and prepares its template. The container is
// removed when the server is closed, and expires after an hour in any case.
func startDocker(ctx context.Context) (*server, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, errNoDockerEngine(err)
	}
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return nil, errNoDockerEngine(err)
	}
	buildDir, err := os.MkdirTemp("", "leasefence-docker-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(buildDir)
	if err := os.WriteFile(filepath.Join(buildDir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return nil, err
	}
	if err := pool.Client.BuildImage(dc.BuildImageOptions{
		Name: DockerImage, ContextDir: buildDir, Dockerfile: "Dockerfile", OutputStream: io.Discard, Context: ctx,
	}); err != nil {
		return nil, fmt.Errorf("build the test image %s: %w", DockerImage, err)
	}
	password := randomHex(16)
	cmd := []string{"postgres", "-c", "shared_preload_libraries=plpgsql_check"}
	for name, value := range ServerSettings {
		cmd = append(cmd, "-c", name+"="+value)
	}
	resource, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: DockerImage,
		Tag:        "latest",
		Env:        []string{"POSTGRES_PASSWORD=" + password, "POSTGRES_INITDB_ARGS=--encoding=UTF8 --locale=C"},
		Cmd:        cmd,
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Errorf("run the test image %s: %w", DockerImage, err)
	}
	_ = resource.Expire(3600)
	stop := func() error { return pool.Purge(resource) }
	base := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("postgres", password),
		Host:     resource.GetHostPort("5432/tcp"),
		Path:     "/postgres",
		RawQuery: "sslmode=disable",
	}
	pool.MaxWait = 2 * time.Minute
	if err := pool.Retry(func() error {
		conn, err := pgx.Connect(ctx, base.String())
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("the PostgreSQL container did not accept connections: %w", err), stop())
	}
	srv := &server{base: base, template: TemplateName, prefix: "lftest", stopContainer: stop}
	if err := srv.open(ctx); err != nil {
		return nil, errors.Join(err, srv.close())
	}
	return srv, nil
}
