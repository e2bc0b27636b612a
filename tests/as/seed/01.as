import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Assistant {
    model Qwen
    role "Assistant"
    description "Answer with structured JSON."

    main func(input {
        question string
    }) {
        use input.question
        return generate({ input: "Answer the question" }) {
            return {
                ok boolean
                answer string
            }
        }
    }
}
