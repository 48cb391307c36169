package mcpserver

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK checks a tool's arguments against its input schema and answers
// with the validator's report ("validating \"arguments\": validating root:
// validating /properties/limit: type: x has type \"string\", want
// \"integer\""); argumentSentences makes that one sentence naming the
// argument, which is what a model acts on. The patterns are compiled at
// their first use: this package is linked into every vis-agent python
// start, where an init's work is paid on each run.
var (
	reportsOnce sync.Once
	reportRes   struct{ wrongType, unexpected, missing *regexp.Regexp }
)

func reports() *struct{ wrongType, unexpected, missing *regexp.Regexp } {
	reportsOnce.Do(func() {
		reportRes.wrongType = regexp.MustCompile(`/properties/(\w+): type: .* has type "(\w+)", want "(\w+)"`)
		reportRes.unexpected = regexp.MustCompile(`unexpected additional propert(?:y|ies) \["([^"]+)"`)
		reportRes.missing = regexp.MustCompile(`missing propert(?:y|ies): \["([^"]+)"`)
	})
	return &reportRes
}

// jsonType names a JSON schema type for a sentence.
func jsonType(t string) string {
	switch t {
	case "integer", "object":
		return "an " + t
	case "number", "string":
		return "a " + t
	case "boolean":
		return "true or false"
	case "array":
		return "a list"
	}
	return t
}

// argumentSentence is the sentence for the SDK's report msg, or "" when
// msg is not one.
func argumentSentence(msg string) string {
	if !strings.HasPrefix(msg, `validating "arguments"`) {
		return ""
	}
	r := reports()
	if m := r.wrongType.FindStringSubmatch(msg); m != nil {
		return m[1] + " must be " + jsonType(m[3]) + ", not " + jsonType(m[2])
	}
	if m := r.unexpected.FindStringSubmatch(msg); m != nil {
		return `unknown argument "` + m[1] + `" (tools/list shows each tool's arguments)`
	}
	if m := r.missing.FindStringSubmatch(msg); m != nil {
		return `missing argument "` + m[1] + `"`
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return "invalid arguments: " + msg[i+2:]
	}
	return msg
}

// argumentSentences rewrites the SDK's argument reports of tools/call.
func argumentSentences(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" {
			return res, err
		}
		if err != nil {
			if s := argumentSentence(err.Error()); s != "" {
				return errorResult(errors.New(s)), nil
			}
			return res, err
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && len(r.Content) == 1 {
			if tc, ok := r.Content[0].(*mcp.TextContent); ok {
				if s := argumentSentence(tc.Text); s != "" {
					tc.Text = s
				}
			}
		}
		return res, err
	}
}
