package cli

import (
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/evidence"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// helpFiles are the usage texts of leasectl and its commands, one file
// each; help fills in what they name from the code.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpTemplates are helpFiles parsed; they are embedded, so parsing
// cannot fail.
var helpTemplates = template.Must(template.ParseFS(helpFiles, "help/*.txt"))

// help is the usage text help/name.txt with its fields filled in: the
// version table, the bundle's roles, the audit checks, the evidence
// signature namespace and, for "main" (mainHelp), the commands.
func help(name string, commandList ...string) string {
	var b strings.Builder
	_ = helpTemplates.ExecuteTemplate(&b, name+".txt", map[string]any{
		"VersionTable": sqlbundle.VersionTable,
		"BundleRoles": wrapWords("         ", 9, append(strings.Fields("table; add --drop-roles to also drop the bundle's own roles, by exact name:"),
			strings.Split(strings.Join(append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...), ", ")+".", " ")...)),
		"AuditChecks":        auditCheckList(),
		"SignatureNamespace": evidence.SignatureNamespace,
		"Commands":           strings.Join(commandList, ""),
	})
	return b.String()
}

// auditCheckList lists every audit check with what a passing database
// shows, wrapped to the width of the other help texts.
func auditCheckList() string {
	var b strings.Builder
	for _, c := range audit.Checks() {
		b.WriteString(wrapWords(fmt.Sprintf("  %-31s", c.ID), 33, strings.Fields(c.Passes)))
	}
	return b.String()
}

// wrapWords writes words after first, each word after a space, each line up
// to 79 characters; the lines after the first start with indent spaces. It
// ends with a newline.
func wrapWords(first string, indent int, words []string) string {
	var b strings.Builder
	line := first
	for i, word := range words {
		if i > 0 && len(line)+1+len(word) > 79 {
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", indent)
		}
		line += " " + word
	}
	b.WriteString(line + "\n")
	return b.String()
}
