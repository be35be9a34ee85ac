"""Chapter detection on real-shaped book text (tracker.books.headings)."""

from __future__ import annotations

import pytest

from tracker.books.headings import find_headings, split_chapters, strip_junk
from tracker.text.numerals import chinese_number

BODY = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。"
)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("十二", 12),
        ("一百零五", 105),
        ("一百十九", 119),
        ("一百三", 103),
        ("一一九", 119),
        ("一二〇", 120),
        ("一○○", 100),
        ("廿三", 23),
        ("兩千零一", 2001),
        ("壹佰贰拾", 120),
        ("１２", 12),
        ("0012", 12),
        ("一千二百三十四", 1234),
        ("三千", 3000),
        ("一万零一", 10001),
        ("甲", None),
        ("", None),
    ],
)
def test_chinese_numbers(text: str, number: int | None) -> None:
    assert chinese_number(text) == number


def test_cases_chapters_uses_the_same_numeral_reader() -> None:
    from tracker.cases import chapters

    assert chapters.chinese_number is chinese_number
    assert chapters.chapter_number("第廿三回 标题") == 23


def _titles(text: str) -> list[str]:
    return [c.title for c in split_chapters(text)[1]]


def test_pirate_banner_and_ads_are_not_chapters() -> None:
    text = (
        "    [三国演义 / 罗贯中 著 ]\n"
        "    作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；请您购买正版图书!\n\n"
        " ------章节内容开始-------\n\n"
        "    正文 第一回 宴桃园豪杰三结义 斩黄巾英雄首立功\n"
        "    更新时间:2007-11-16 7:55:51 本章字数:4804\n\n\n"
        f"{BODY}\n　　{BODY}\n"
        "    正文 第二回 张翼德怒鞭督邮 何国舅谋诛宦竖\n"
        "    更新时间:2007-11-16 7:55:51 本章字数:5791\n\n"
        f"{BODY}\n\n"
        "作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；请购买正版图书!\n"
    )
    front, chapters, warnings = split_chapters(text)
    assert [c.title for c in chapters] == [
        "第一回 宴桃园豪杰三结义 斩黄巾英雄首立功",
        "第二回 张翼德怒鞭督邮 何国舅谋诛宦竖",
    ]
    assert "罗贯中" in front and "章节内容开始" in front
    assert all("更新时间" not in c.text and "作品仅供" not in c.text for c in chapters)
    assert chapters[0].text.startswith(BODY) and chapters[1].text == BODY
    assert [c.index for c in chapters] == [1, 2]
    assert warnings == []


def test_prefixes_before_headings() -> None:
    text = f"《》目录 第一回　灵根育孕源流出\n{BODY}\n《西游记》第二回　悟彻菩提真妙理\n{BODY}\n"
    assert _titles(text) == ["第一回　灵根育孕源流出", "第二回　悟彻菩提真妙理"]


def test_heading_words_inside_sentences_are_not_headings() -> None:
    text = (
        f"第一章 开端\n他读到第三回时，天已经黑了。{BODY}\n"
        f"第三回时他已睡着，梦里还在想第二章的事。\n第一章，我们讲过了这个问题\n"
        f"第二章 继续\n{BODY}\n第三回合开始了，两人又打了起来\n第二部分的内容\n"
    )
    assert _titles(text) == ["第一章 开端", "第二章 继续"]


def test_table_of_contents_makes_no_empty_chapters() -> None:
    toc = "目录\n第一章 山雨欲来\n第二章 风满楼\n第三章 夜行\n\n"
    body = "".join(
        f"{t}\n{BODY}{i}\n"
        for i, t in enumerate(["第一章 山雨欲来", "第二章 风满楼", "第三章 夜行"])
    )
    front, chapters, warnings = split_chapters(toc + body)
    assert [c.title for c in chapters] == ["第一章 山雨欲来", "第二章 风满楼", "第三章 夜行"]
    assert all(c.text.startswith(BODY) for c in chapters)
    assert "第三章 夜行" in front
    assert any("table of contents" in w for w in warnings)


def test_volumes_group_chapters() -> None:
    text = (
        f"第一卷 潜龙在渊\n第一章 少年\n{BODY}\n第二章 出山\n{BODY}\n"
        f"第二卷 飞龙在天\n这一卷讲的是主角如何名动天下，其间风波不断，恩怨纠缠，直至最后一战。\n"
        f"第一章 入京\n{BODY}\n"
    )
    _front, chapters, warnings = split_chapters(text)
    assert [(c.title, c.volume) for c in chapters] == [
        ("第一章 少年", "第一卷 潜龙在渊"),
        ("第二章 出山", "第一卷 潜龙在渊"),
        ("第二卷 飞龙在天", "第二卷 飞龙在天"),  # the volume's own prose is kept
        ("第一章 入京", "第二卷 飞龙在天"),
    ]
    assert warnings == []  # numbering restarts in a new volume


def test_volume_headings_alone_are_the_chapters() -> None:
    text = f"卷一 春\n{BODY}\n卷二 夏\n{BODY}\n"
    assert _titles(text) == ["卷一 春", "卷二 夏"]
    text = f"第一卷\n{BODY}\n第二卷\n{BODY}\n"
    assert [(c.title, c.volume) for c in split_chapters(text)[1]] == [
        ("第一卷", ""),
        ("第二卷", ""),
    ]


def test_special_headings() -> None:
    text = (
        f"楔子\n{BODY}\n序章 起\n{BODY}\n第1章 始\n{BODY}\n尾声\n{BODY}\n番外一 后来\n{BODY}\n"
        f"后记\n{BODY}\n序幕拉开了，众人屏息。\n前言不搭后语\n"
    )
    assert _titles(text) == ["楔子", "序章 起", "第1章 始", "尾声", "番外一 后来", "后记"]


def test_arabic_full_width_zeros_and_mixed_numerals() -> None:
    text = f"第001章 一\n{BODY}\n第０２章 二\n{BODY}\n第三章 三\n{BODY}\n第 4 章 四\n{BODY}\n"
    heads = find_headings(text)
    assert [h.number for h in heads] == [1, 2, 3, 4]
    _front, chapters, warnings = split_chapters(text)
    assert len(chapters) == 4
    assert any("mix Arabic and Chinese" in w for w in warnings)


def test_traditional_headings() -> None:
    text = f"第一囘 靈根育孕源流出\n{BODY}\n第二囘：悟徹菩提真妙理\n{BODY}\n第三節 尾\n{BODY}\n"
    heads = find_headings(text)
    assert [(h.kind, h.number) for h in heads] == [("回", 1), ("回", 2), ("节", 3)]


def test_out_of_order_and_repeated_keep_file_order() -> None:
    text = "".join(f"第{n}章 标题\n{BODY}\n" for n in ["一", "三", "二", "三", "五"])
    _front, chapters, warnings = split_chapters(text)
    assert [c.title for c in chapters] == [f"第{n}章 标题" for n in "一三二三五"]
    joined = " | ".join(warnings)
    assert "out of order at 第二章" in joined
    assert "repeated at 第三章" in joined
    assert "skip at 第一章 → 第三章, 第三章 → 第五章" in joined


def test_short_chapter_is_kept_with_a_warning() -> None:
    text = f"第一章 长\n{BODY}\n第二章 短\n五个字而已\n第三章 长\n{BODY}\n"
    _front, chapters, warnings = split_chapters(text)
    assert [c.text for c in chapters][1] == "五个字而已"
    assert any("very short chapters at 第二章 短 (5 characters)" in w for w in warnings)


def test_heading_without_text_is_skipped_and_reported() -> None:
    text = f"第一章 有\n{BODY}\n第二章 无\n\n第三章 有\n{BODY}\n"
    _front, chapters, warnings = split_chapters(text)
    assert [c.title for c in chapters] == ["第一章 有", "第三章 有"]
    assert any("without text skipped at 第二章 无" in w for w in warnings)


def test_heading_shown_twice_by_a_scraped_page() -> None:
    text = (
        f"第一一八回  记微嫌舅兄欺弱女\n{BODY}\n"
        "第一一九回  中乡魁宝玉却尘缘\n\n    回首页\n\n    后一页\n\n    回目录\n\n"
        f"    第一一九回中乡魁宝玉却尘缘——\n\n{BODY}\n"
    )
    _front, chapters, warnings = split_chapters(text)
    assert [c.title for c in chapters] == [
        "第一一八回 记微嫌舅兄欺弱女",
        "第一一九回中乡魁宝玉却尘缘——",
    ]
    assert [h.number for h in find_headings(text)] == [118, 119, 119]
    assert warnings == []


def test_no_headings_is_one_chapter_and_a_warning() -> None:
    front, chapters, warnings = split_chapters(f"{BODY}\n{BODY}")
    assert front == "" and len(chapters) == 1 and chapters[0].title == ""
    assert warnings == ["no chapter headings found: the book is one chapter"]


def _run_on(titles: list[tuple[str, str]], openers: list[str]) -> str:
    """A scrape that lost its line breaks: heading, title and body run together."""
    parts = ["紅樓夢紅樓夢紅樓夢"]
    for (number, title), opener in zip(titles, openers, strict=True):
        parts.append(
            f"第{number}回{title}{opener}{BODY * 60}此乃第{number}回也要知端的，且听下回分解"
        )
    return "".join(parts)


def test_headings_running_inline_in_text_without_line_breaks() -> None:
    titles = [
        ("一", "甄士隱夢幻識通靈賈雨村風塵怀閨秀"),
        ("二", "賈夫人仙逝揚州城冷子興演說榮國府"),
        ("三", "賈雨村夤緣复舊職林黛玉拋父進京都"),
        ("四", "薄命女偏逢薄命郎葫蘆僧亂判葫蘆案"),
    ]
    text = _run_on(
        titles, ["此開卷", "詩云", "卻說", "第三回中既將薛家母子在榮府內寄居等事略已表明"]
    )
    assert "\n" not in text and len(text) > 5000
    front, chapters, _warnings = split_chapters(text)
    assert front == "紅樓夢紅樓夢紅樓夢"
    assert [c.title for c in chapters] == [f"第{n}回{t}" for n, t in titles]
    assert chapters[0].text.startswith("此開卷话说天下") and chapters[3].text.startswith("第三回中")


def test_inline_comma_couplets_and_a_lost_zero() -> None:
    body = BODY * 80
    parts = [f"第九十九回：諸葛亮大破魏兵，司馬懿入寇西蜀{body}且看下文分解。"]
    parts.append(f"第一回：漢兵劫寨破曹真，武侯鬥陣辱仲達卻說{body}且看下文分解。")
    parts.append(f"第一一回：出隴上諸葛妝神，奔劍閣張郃中計卻說{body}")
    heads = find_headings("".join(parts))
    assert [h.number for h in heads] == [99, 100, 101]
    assert heads[1].title == "第一回：漢兵劫寨破曹真，武侯鬥陣辱仲達"


def test_junk_lines_only_when_short() -> None:
    long_line = "本站" + "长" * 200
    assert (
        strip_junk(f"甲\n首页|原创书库|现代\n乙\n{long_line}\n回目录\n丙")
        == f"甲\n乙\n{long_line}\n丙"
    )


def test_three_thousand_chapters() -> None:
    text = "".join(f"第{n}章 第{n}个故事\n{BODY}\n" for n in range(1, 3001))
    _front, chapters, warnings = split_chapters(text)
    assert len(chapters) == 3000 and chapters[-1].title == "第3000章 第3000个故事"
    assert warnings == []


def test_a_web_novel_download() -> None:
    text = (
        "《剑来》\n作者：烽火戏诸侯\n内容简介：大千世界，无奇不有。\n\n"
        "正文卷 第一卷 笼中雀\n"
        f"第1章 惊蛰\n天才一秒记住本站地址：www.example.com\n{BODY}\n　　{BODY}（本章完）\n"
        f"第2章 开门\n最快更新剑来最新章节！\n{BODY}\n（本章完）\n"
        f"第二卷 山水郎\n第3章 出门\n{BODY}\n"
    )
    front, chapters, warnings = split_chapters(text)
    assert "烽火戏诸侯" in front
    assert [(c.title, c.volume) for c in chapters] == [
        ("第1章 惊蛰", "第一卷 笼中雀"),
        ("第2章 开门", "第一卷 笼中雀"),
        ("第3章 出门", "第二卷 山水郎"),
    ]
    assert chapters[0].text == f"{BODY}\n　　{BODY}"  # the end mark goes, its line stays
    assert chapters[1].text == BODY
    assert warnings == []


def test_heading_and_first_paragraph_on_one_line() -> None:
    text = f"第一章 开端　　{BODY}\n{BODY}\n第二章　　{BODY}\n第三章 开端，他走了。{BODY}\n"
    _front, chapters, _warnings = split_chapters(text)
    assert [(c.title, c.text) for c in chapters] == [
        ("第一章 开端", f"{BODY}\n{BODY}"),
        ("第二章", f"{BODY}\n第三章 开端，他走了。{BODY}"),
    ]


def test_sections_stay_inside_their_chapters() -> None:
    text = (
        f"第一章 总论\n第一节 起源\n{BODY}\n第二节 发展\n{BODY}\n第二章 分论\n第一节 甲\n{BODY}\n"
    )
    _front, chapters, warnings = split_chapters(text)
    assert [c.title for c in chapters] == ["第一章 总论", "第二章 分论"]
    assert chapters[0].text == f"第一节 起源\n{BODY}\n第二节 发展\n{BODY}"
    assert warnings == []
    # sections alone are the chapters
    assert _titles(f"第一节 起源\n{BODY}\n第二节 发展\n{BODY}\n") == ["第一节 起源", "第二节 发展"]
