"""Small original Chinese texts for tests (written for Yinji; no third-party text).

``work(seed, n)`` strings together sentences drawn from phrase lists with a seeded
random generator, so every test gets long, varied, reproducible "works" whose
passages do not repeat by accident.
"""

from __future__ import annotations

import random

SUBJECTS = [
    "老船长",
    "山村教师",
    "年轻的邮差",
    "城南的书店老板",
    "她的外婆",
    "守夜的看门人",
    "那位画家",
    "小镇医生",
    "远行的商人",
    "戏班的琴师",
    "河边的渔夫",
    "新来的记者",
    "夜校的学生",
    "茶馆掌柜",
    "铁匠的女儿",
    "灯塔看守",
    "旧货摊主",
    "种梨的老人",
    "火车司机",
    "抄书先生",
]
VERBS = [
    "慢慢推开",
    "悄悄记下",
    "反复端详",
    "一直惦记着",
    "小心收起",
    "在灯下翻看",
    "轻声念起",
    "默默擦亮",
    "终于找回",
    "认真修补",
    "偶然想起",
    "独自守着",
    "匆匆写完",
    "仔细比对",
    "笑着递过",
]
OBJECTS = [
    "那封泛黄的旧信",
    "半本没有封面的账簿",
    "一只掉了漆的木箱",
    "墙角的铜铃",
    "祖父留下的怀表",
    "一张褪色的船票",
    "窗台上的青瓷碗",
    "抽屉里的地图",
    "雨夜收到的电报",
    "一串生锈的钥匙",
    "写满批注的课本",
    "那盏煤油灯",
    "码头上的木牌",
    "门口的石狮子",
    "一叠手抄的曲谱",
]
PLACES = [
    "在雾气弥漫的清晨",
    "趁着集市散去的黄昏",
    "在大雪封山的冬夜",
    "在梅雨连绵的季节",
    "在钟楼敲过三下之后",
    "在桥头的槐树下",
    "在搬家的前一天",
    "在渡船靠岸的时候",
    "在停电的夜里",
    "在秋收后的打谷场上",
    "在县城唯一的照相馆里",
    "在长途汽车的终点站",
]
ENDINGS = [
    "心里忽然明白了许多事情",
    "却始终没有说出口",
    "似乎听见了远处的汽笛",
    "决定再等一个春天",
    "把往事一件件讲给孩子们听",
    "终于露出了久违的笑容",
    "看见天边亮起一道微光",
    "想起多年前那个承诺",
    "于是提笔写下第一行字",
    "转身走进了热闹的人群",
]


WORDS = [
    "后来",
    "那年",
    "第二天",
    "忽然",
    "原来",
    "其实",
    "渐渐",
    "偶尔",
    "果然",
    "依旧",
    "从前",
    "如今",
    "只是",
    "于是",
    "仍然",
    "春天",
    "秋风",
    "细雨",
    "晚霞",
    "月光",
    "山路",
    "石桥",
    "河堤",
    "村口",
    "巷子",
    "院墙",
    "屋檐",
    "竹林",
    "稻田",
    "炉火",
    "旧友",
    "邻居",
    "孩子",
    "姑娘",
    "先生",
    "师傅",
    "伙计",
    "客人",
    "母亲",
    "父亲",
    "兄长",
    "妹妹",
    "学徒",
    "乡亲",
    "掌柜",
    "走过",
    "停下",
    "回头",
    "点头",
    "叹气",
    "等待",
    "答应",
    "告别",
    "出发",
    "归来",
    "收拾",
    "打听",
    "商量",
    "张望",
    "沉默",
    "温暖",
    "安静",
    "匆忙",
    "清冷",
    "明亮",
    "潮湿",
    "遥远",
    "熟悉",
    "陌生",
    "疲惫",
    "欢喜",
    "犹豫",
    "坚定",
    "模糊",
    "清楚",
    "一封",
    "一盏",
    "一条",
    "一片",
    "几只",
    "半碗",
    "两张",
    "整夜",
    "满院",
    "一阵",
    "灯笼",
    "木船",
    "铜锣",
    "瓷瓶",
    "布鞋",
    "雨伞",
    "竹篮",
    "药箱",
    "琵琶",
    "棋盘",
    "砚台",
    "花灯",
    "茶壶",
    "麦穗",
    "风筝",
]


def sentence(rng: random.Random) -> str:
    # Stock phrases plus free word runs: long enough to read like prose, varied
    # enough that two works share no long passage by accident.
    free = "".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6)))
    return (
        f"{rng.choice(PLACES)}，{rng.choice(SUBJECTS)}{free}{rng.choice(VERBS)}"
        f"{rng.choice(OBJECTS)}，{rng.choice(WORDS)}{rng.choice(ENDINGS)}。"
    )


def work(seed: int, sentences: int = 40) -> str:
    """A reproducible text of about 35 characters a sentence."""
    rng = random.Random(seed)
    return "".join(sentence(rng) for _ in range(sentences))


# Real homophone pairs with the same pinyin initial (a common pirate-site disguise).
HOMOPHONES = {
    "的": "地",
    "在": "再",
    "他": "她",
    "是": "事",
    "做": "作",
    "已": "以",
    "会": "汇",
    "记": "纪",
    "看": "刊",
    "心": "新",
    "里": "理",
    "一": "衣",
    "上": "尚",
    "到": "道",
    "天": "添",
    "信": "新",
    "书": "输",
    "老": "姥",
    "年": "念",
    "夜": "页",
    "前": "钱",
}


def homophones(text: str) -> str:
    return "".join(HOMOPHONES.get(ch, ch) for ch in text)


def random_edits(text: str, rate: float, seed: int = 0) -> str:
    """Replace ``rate`` of the Han characters by other Han characters."""
    rng = random.Random(seed)
    pool = "天地人和春夏秋冬东南西北风花雪月山水云雨金木水火土日星辰江河湖海"
    out = []
    for ch in text:
        if "\u4e00" <= ch <= "\u9fff" and rng.random() < rate:
            ch = rng.choice(pool)
        out.append(ch)
    return "".join(out)
