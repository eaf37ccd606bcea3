package sqlbundle

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// createdFunction finds the name of each function a file under functions/
// creates.
var createdFunction = regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION durable_jobs\.([a-z_]+)\(`)

// runtimeGrant finds each function granted to a runtime role.
var runtimeGrant = regexp.MustCompile(`(?m)^GRANT EXECUTE ON FUNCTION durable_jobs\.([a-z_]+)\(.*\bdurable_job_(producer|worker|operator|auditor)\b`)

// functionFiles returns each file under functions/ with its text.
func functionFiles(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("functions")
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		body, err := os.ReadFile(path.Join("functions", e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(body)
	}
	return out
}

// sql/functions holds one file per function family, named after the
// family with no version (the versions are the frozen migrations), and
// each function is created in one file only. That each file holds exactly
// what a fresh install runs is checked against a database by
// sql/integration's TestFunctionFilesHoldTheInstalledDefinitions.
func TestFunctionFilesAreOneFilePerFamily(t *testing.T) {
	definedIn := map[string]string{}
	for name, body := range functionFiles(t) {
		require.Regexp(t, `^[a-z][a-z_]*[a-z]\.sql$`, name, "a family file is <family>.sql, edited in place (no _vN copies)")
		require.NotContains(t, body, "{{", "%s holds SQL, not a template", name)
		require.NotRegexp(t, `(?m)^CREATE FUNCTION`, body, "%s: a current definition is CREATE OR REPLACE, so a migration can include it as it is", name)
		functions := createdFunction.FindAllStringSubmatch(body, -1)
		require.NotEmpty(t, functions, "%s creates at least one function", name)
		for _, m := range functions {
			if other, ok := definedIn[m[1]]; ok && other != name {
				t.Errorf("durable_jobs.%s is created in both %s and %s: one current definition per function", m[1], other, name)
			}
			definedIn[m[1]] = name
		}
	}
}

// docSection is one part of a Markdown file: a heading and the text up to
// the next heading.
type docSection struct {
	heading string
	body    string
}

// markdownSections splits Markdown text at its headings, leaving fenced
// code blocks whole (a "# comment" inside one is not a heading).
func markdownSections(text string) []docSection {
	var out []docSection
	cur := docSection{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			out = append(out, cur)
			cur = docSection{heading: line}
			continue
		}
		cur.body += line + "\n"
	}
	return append(out, cur)
}

// docs/sql-api.md says where each function of the surface lives: every
// function granted to a runtime role is named in a section that links the
// file under sql/functions defining it, each function heading is the bare
// name followed by that link, and no heading is a 200-character signature.
func TestSQLAPILinksEachFunctionToItsFile(t *testing.T) {
	raw, err := os.ReadFile("../docs/sql-api.md")
	require.NoError(t, err)
	sections := markdownSections(string(raw))
	fileOf := map[string]string{}
	public := map[string]bool{}
	for name, body := range functionFiles(t) {
		for _, m := range createdFunction.FindAllStringSubmatch(body, -1) {
			fileOf[m[1]] = name
		}
		for _, m := range runtimeGrant.FindAllStringSubmatch(body, -1) {
			public[m[1]] = true
		}
	}
	require.NotEmpty(t, public, "the files grant functions to runtime roles")
	link := func(function string) string {
		return "](../sql/functions/" + fileOf[function] + ")"
	}
	headingName := regexp.MustCompile("^#+ `([a-z_]+)`$")
	for _, s := range sections {
		require.LessOrEqual(t, len(s.heading), 80, "docs/sql-api.md: a short heading, the signature below it: %q", s.heading)
		m := headingName.FindStringSubmatch(s.heading)
		if m == nil {
			continue
		}
		require.Contains(t, fileOf, m[1], "docs/sql-api.md: heading %q names a function the bundle does not define", s.heading)
		first, _, _ := strings.Cut(strings.TrimSpace(s.body), "\n")
		require.Equal(t, "Defined in [`sql/functions/"+fileOf[m[1]]+"`"+link(m[1])+".", first,
			"docs/sql-api.md: the section of %s starts with the link to its file", m[1])
	}
	for function := range public {
		found := false
		for _, s := range sections {
			named := strings.Contains(s.heading, "`"+function+"`") || strings.Contains(s.body, "`"+function+"(")
			if named && strings.Contains(s.body, link(function)) {
				found = true
				break
			}
		}
		require.True(t, found, "docs/sql-api.md documents durable_jobs.%s in a section that links sql/functions/%s",
			function, fileOf[function])
	}
}
