import llm Qwen from "openai://gpt-4.1-mini"
import tool Find from "sh://find"
import memory Lessons from "file://./.agentscript/lessons.jsonl"

main agent A {
    model Qwen

    main func(input) {
        use Qwen
        use Find
        use Lessons
        use helper
        use A
        use input.question < 2k
        return input
    }

    func helper(input) {
        return input
    }
}
