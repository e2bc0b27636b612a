import llm Bad from "gpt-4"
import tool Shell from "sh://bash"
import tool Api from "https://api.example.com/v1/path"
import memory Mem from "sqlite:///etc/passwd.db"
import file Secret from "/etc/passwd"
import agent Other from "./other.txt"

main agent A {
    main func(input) {
        return input
    }
}
