package docscheck

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// anchorLink is a Markdown link to a heading: ](target#fragment), target
// empty for the same file.
var anchorLink = regexp.MustCompile(`\]\(([^)\s#]*)#([^)\s]+)\)`)

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lines in fenced code blocks are not headings, and a
// repeated anchor gets -1, -2, ... as on GitHub.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := markdownHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// brokenAnchorLinks returns, for the Markdown file at slash path file with
// text, every link to a heading of a repository Markdown file (itself
// included) that names no heading there; read gives a file's text by its
// slash path, or false when there is none. Links to other sites and to
// files that are not Markdown are not checked.
func brokenAnchorLinks(file, text string, read func(string) (string, bool)) []string {
	var broken []string
	for _, m := range anchorLink.FindAllStringSubmatch(text, -1) {
		target, fragment := m[1], m[2]
		if strings.Contains(target, "://") || (target != "" && !strings.HasSuffix(target, ".md")) {
			continue
		}
		resolved := file
		if target != "" {
			resolved = path.Join(path.Dir(file), target)
		}
		body, ok := read(resolved)
		if !ok {
			broken = append(broken, file+": "+m[0]+": no file "+resolved)
			continue
		}
		if !headingAnchors(body)[fragment] {
			broken = append(broken, file+": "+m[0]+": no heading of "+resolved+" has the anchor #"+fragment)
		}
	}
	return broken
}

// Issue 35: the runbook got a table of contents and one heading per
// rollout step, which the control matrix and the threat model link to. A
// heading renamed under a link, or a link mistyped, fails here: every link
// to a heading in the Markdown files under docs/ and in README.md must
// name a heading of the file it points at.
func TestEveryMarkdownLinkToAHeadingResolves(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	files, err := MarkdownFiles(k.Root)
	require.NoError(t, err)
	files = append(files, "README.md")
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(k.Root, filepath.FromSlash(p)))
		return string(b), err == nil
	}
	var broken []string
	links := 0
	for _, f := range files {
		text, ok := read(f)
		require.True(t, ok, "read %s", f)
		links += len(anchorLink.FindAllString(text, -1))
		broken = append(broken, brokenAnchorLinks(f, text, read)...)
	}
	require.Empty(t, broken, "these links name no heading:\n%s", strings.Join(broken, "\n"))
	require.Greater(t, links, 100, "the documents link to suspiciously few headings; is the link pattern broken?")
}

func TestBrokenAnchorLinksFindsMissingHeadingsAndFiles(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"docs/a.md": "# Title\n\n## Step 1: `migrate down`\n\n## Notes\n\n## Notes\n\n```\n# not a heading\n```\n",
	}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	text := "[ok](#notes) [ok](#notes-1) [ok](a.md#step-1-migrate-down) [ok](../docs/a.md#title) " +
		"[web](https://example.com/x.md#nothing) [code](../sql/x.sql#L3) " +
		"[bad](#notes-2) [bad](a.md#not-a-heading) [bad](b.md#title)"
	broken := brokenAnchorLinks("docs/a.md", text, read)
	require.Len(t, broken, 3, "%v", broken)
	require.Contains(t, broken[0], "#notes-2")
	require.Contains(t, broken[1], "#not-a-heading")
	require.Contains(t, broken[2], "no file docs/b.md")
}
