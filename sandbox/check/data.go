package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Problem is why a text does not parse, and where.
type Problem struct {
	Line    int    `json:"line"`   // 1-based; 0 when the parser does not say
	Column  int    `json:"column"` // 1-based, in characters; 0 when unknown
	Message string `json:"message"`
}

// bom is the UTF-8 byte order mark, which Python skips at the start of a
// file and JSON, TOML and YAML files sometimes carry.
const bom = "\ufeff"

// parseData parses src as kind (JSON, TOML or YAML): nil when it parses.
func parseData(kind Kind, src string) *Problem {
	src = strings.TrimPrefix(src, bom)
	switch kind {
	case JSON:
		return parseJSON(src)
	case TOML:
		return parseTOML(src)
	case YAML:
		return parseYAML(src)
	}
	return nil
}

func parseJSON(src string) *Problem {
	if json.Valid([]byte(src)) {
		return nil
	}
	var v json.RawMessage
	err := json.Unmarshal([]byte(src), &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the wrong one included.
		line, col := position(src, int(se.Offset)-1)
		return &Problem{Line: line, Column: col, Message: se.Error()}
	}
	if err == nil {
		err = errors.New("not valid JSON")
	}
	return &Problem{Message: err.Error()}
}

// maxTOMLDepth bounds the nesting of arrays and inline tables the TOML
// parser is given: it recurses per level and takes seconds on a file
// nested a million deep, which a block can write.
const maxTOMLDepth = 1000

func parseTOML(src string) *Problem {
	if tomlDepth(src) > maxTOMLDepth {
		line, _ := position(src, len(src))
		return &Problem{Line: line, Message: fmt.Sprintf("arrays or inline tables nested more than %d deep", maxTOMLDepth)}
	}
	var v map[string]any
	_, err := toml.Decode(src, &v)
	if err == nil {
		return nil
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Problem{Line: pe.Position.Line, Column: pe.Position.Col, Message: pe.Message}
	}
	return &Problem{Message: err.Error()}
}

// tomlDepth is the deepest nesting of brackets and braces in src outside
// strings and comments (strings read roughly: the bound only needs to
// hold for files that do parse).
func tomlDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '"', '\'':
			q := string(c)
			if strings.HasPrefix(src[i:], q+q+q) {
				end := strings.Index(src[i+3:], q+q+q)
				if end < 0 {
					return deepest
				}
				i += 3 + end + 2
				continue
			}
			for i++; i < len(src) && src[i] != c && src[i] != '\n'; i++ {
				if c == '"' && src[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// parseYAML parses every document of src. Values are decoded (into an
// interface), so duplicate keys count as errors, as YAML says, and
// go-yaml's limits on aliases and depth hold.
func parseYAML(src string) *Problem {
	d := yaml.NewDecoder(strings.NewReader(src))
	for {
		var v any
		err := d.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			continue
		}
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		// The parser's messages read "yaml: line 3: ...".
		msg = strings.TrimPrefix(msg, "yaml: ")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, text, ok := strings.Cut(rest, ": "); ok {
				if line, err := strconv.Atoi(n); err == nil {
					return &Problem{Line: line, Message: text}
				}
			}
		}
		return &Problem{Message: msg}
	}
}

// position is the 1-based line and character column of byte offset off.
func position(src string, off int) (line, col int) {
	off = max(0, min(off, len(src)))
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return 1 + strings.Count(src[:off], "\n"), 1 + utf8.RuneCountInString(src[start:off])
}
