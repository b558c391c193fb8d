package proxy_test

import (
	"errors"

	"github.com/openai/openai-go/v3"
)

func asOpenAIError(err error, target **openai.Error) bool { return errors.As(err, target) }
