package main

import (
	"embed"
	"strings"
	"text/template"
)

// helpFiles are the usage texts of leasectl's commands, one file each.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpTemplates are helpFiles parsed; they are embedded, so parsing
// cannot fail.
var helpTemplates = template.Must(template.ParseFS(helpFiles, "help/*.txt"))

// help is the usage text help/name.txt.
func help(name string) string {
	var b strings.Builder
	_ = helpTemplates.ExecuteTemplate(&b, name+".txt", nil)
	return b.String()
}
