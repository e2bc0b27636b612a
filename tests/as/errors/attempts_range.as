import llm Qwen from "openai://gpt-4.1-mini"

main agent A {
    model Qwen

    main func(input) {
        a = generate({ input: "one", attempts: 21 }) {
            return {
                ok boolean
            }
        }
        return generate({ input: "two", attempts: 1.5 }) {
            return {
                ok boolean
            }
        }
    }
}
