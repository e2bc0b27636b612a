import llm Qwen from "openai://gpt-4.1-mini"

main agent A {
    model Qwen

    main func(input) {
        return generate({ input: "x" }) {
            return {
                ok bool
            }
        }
    }
}
