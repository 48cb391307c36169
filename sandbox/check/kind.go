package check

import (
	"path/filepath"
	"strings"
)

// Kind is the checker of a file.
type Kind string

// The checkers.
const (
	Python Kind = "python"
	JSON   Kind = "json"
	TOML   Kind = "toml"
	YAML   Kind = "yaml"
)

// KindOf is the checker of the file name (a path), "" for a file that is
// not checked. JSON files that editors and tools read with comments
// (tsconfig.json, .vscode/settings.json, ...) are not checked as JSON:
// their comments would read as errors.
func KindOf(name string) Kind {
	base := filepath.Base(name)
	switch strings.ToLower(filepath.Ext(base)) {
	case ".py", ".pyi":
		return Python
	case ".json":
		if withComments(name, base) {
			return ""
		}
		return JSON
	case ".toml":
		return TOML
	case ".yaml", ".yml":
		return YAML
	}
	return ""
}

// withComments reports whether a .json file is one of those read as
// JSON with comments (JSONC).
func withComments(name, base string) bool {
	b := strings.ToLower(base)
	for _, prefix := range []string{"tsconfig", "jsconfig"} {
		if strings.HasPrefix(b, prefix+".") {
			return true
		}
	}
	switch b {
	case ".eslintrc.json", "devcontainer.json", ".devcontainer.json", "launch.json", "tasks.json":
		return true
	}
	return strings.Contains("/"+filepath.ToSlash(name), "/.vscode/")
}
