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

	"github.com/vis-agent/vis-agent/internal/tomlbound"
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

// Bounds of the texts ParseData parses. A parser's cost on a crafted
// text is the writer's to choose, and a block writes the files the host
// checks: past a bound the text is not parsed, and the check says why.
const (
	// maxJSONBytes: JSON's parser is linear (and stops at a depth of
	// 10,000); the after-block check reads no more in all.
	maxJSONBytes = 5 << 20
	// maxYAMLBytes: its parser builds a tree of the whole text, and costs
	// more per byte (TOML's bounds are tomlbound's).
	maxYAMLBytes = 1 << 20
	// maxYAMLKeys bounds one YAML mapping's keys: the parser compares each
	// key with every other one for duplicates (32,000 keys took 1.2 s).
	maxYAMLKeys = 4096
	// maxMessage bounds a parser's message, which may quote the text.
	maxMessage = 1024
)

// ParseData parses src as kind (JSON, TOML or YAML) within the bounds
// above: nil when it parses, else why not; unchecked says why the text
// was not parsed ("" when it was).
func ParseData(kind Kind, src string) (p *Problem, unchecked string) {
	if why := OverBounds(kind, src); why != "" {
		return nil, why
	}
	src = strings.TrimPrefix(src, bom)
	switch kind {
	case JSON:
		p = parseJSON(src)
	case TOML:
		p = parseTOML(src)
	case YAML:
		p, unchecked = parseYAML(src)
	}
	if p != nil && len(p.Message) > maxMessage {
		p.Message = strings.ToValidUTF8(p.Message[:maxMessage], "") + "…"
	}
	return p, unchecked
}

// OverBounds says why ParseData would not parse src as kind, when a look
// at its bytes tells (too large, a TOML key too deep): "" when it would.
func OverBounds(kind Kind, src string) string {
	src = strings.TrimPrefix(src, bom)
	limit := map[Kind]int{JSON: maxJSONBytes, TOML: tomlbound.MaxBytes, YAML: maxYAMLBytes}[kind]
	if len(src) > limit {
		return fmt.Sprintf("%s over %d MiB", strings.ToUpper(string(kind)), limit>>20)
	}
	if kind == TOML && tomlbound.Depth(src) > tomlbound.MaxDepth {
		return fmt.Sprintf("TOML keys, arrays or inline tables nested more than %d deep", tomlbound.MaxDepth)
	}
	return ""
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

func parseTOML(src string) *Problem {
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

// parseYAML parses every document of src. Values are decoded (into an
// interface), so duplicate keys count as errors, as YAML says, and
// go-yaml's limits on aliases and depth hold; a document with a mapping
// of more than maxYAMLKeys keys is not decoded (unchecked says so).
func parseYAML(src string) (p *Problem, unchecked string) {
	d := yaml.NewDecoder(strings.NewReader(src))
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil, ""
		}
		if err == nil {
			if mostKeys(&doc) > maxYAMLKeys {
				return nil, fmt.Sprintf("a YAML mapping of more than %d keys", maxYAMLKeys)
			}
			var v any
			err = doc.Decode(&v)
		}
		if err == nil {
			continue
		}
		return yamlProblem(err), ""
	}
}

// mostKeys is the largest number of keys of one mapping under n (aliases
// are not followed: what they name is under n too).
func mostKeys(n *yaml.Node) int {
	most := 0
	if n.Kind == yaml.MappingNode {
		most = len(n.Content) / 2
	}
	for _, c := range n.Content {
		most = max(most, mostKeys(c))
	}
	return most
}

// yamlProblem is a go-yaml error as a Problem.
func yamlProblem(err error) *Problem {
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

// position is the 1-based line and character column of byte offset off.
func position(src string, off int) (line, col int) {
	off = max(0, min(off, len(src)))
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return 1 + strings.Count(src[:off], "\n"), 1 + utf8.RuneCountInString(src[start:off])
}
