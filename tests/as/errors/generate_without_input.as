import llm Qwen from "openai://gpt-4.1-mini"

main agent A {
    model Qwen

    main func(input) {
        return generate({ limit: 800, tries: 2 }) {
            return {
                ok boolean
            }
        }
    }
}
